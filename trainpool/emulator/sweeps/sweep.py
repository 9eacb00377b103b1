"""Running a HyperparameterTuningJob: each trial a CustomJob of its own, truly in parallel.

Trial ``n`` (ids "1", "2", ...) runs the trial job spec with the trial id in
CLUSTER_SPEC, TF_CONFIG, CLOUD_ML_TRIAL_ID and the output directories, and its
parameters appended to every pool's args as ``--name=value``.

As on Vertex, the trial runs as a CustomJob ("The CustomJob name linked to the Trial. It's
set for a HyperparameterTuningJob's Trial", ``Trial.custom_job`` in the aiplatform v1
proto): a record under the sweep's parent, with its own state, error, times and logs,
listable with ListCustomJobs, cancelled with the sweep, preemptible like any CustomJob.
Vertex documents neither its display name nor its labels; the emulator's are
``<sweep display name>-trial-<n>`` and :data:`SWEEP_LABEL` / :data:`TRIAL_LABEL` (the
sweep's own labels are not copied, so a search by a sweep's labels never finds its trials).
Its files stay in ``<root>/jobs/<sweep id>/trial-<n>/``; ``<root>/jobs/<trial job id>`` links
there, so its logs are read like any job's.

Its measurements are every record of workerpool0-0's hypertune metric file
(``Trial.measurements``, whatever the trial's outcome); its final measurement is chosen
from them by the study's ``measurementSelectionType``. Whether failed trials fail the
job is :func:`trainpool.emulator.sweeps.trial_rules.trials_fail_job` (0: the service decides).

With an ``automated_stopping_spec`` in the study, running trials are watched and stopped
early by its rule (:mod:`trainpool.emulator.sweeps.stopping`: STOPPING, then SUCCEEDED with
the selected measurement). Study fields the emulator does not apply are named in the job
log (:mod:`trainpool.emulator.sweeps.study_fields`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent import futures
from datetime import datetime, timedelta
from typing import Any

from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import study as study_types
from google.cloud.aiplatform_v1.types.job_state import JobState
from google.protobuf import duration_pb2

from trainpool.emulator.jobs.failure_rules import CODE_CANCELLED, CODE_FAILED_PRECONDITION
from trainpool.emulator.jobs.logs import JobLog
from trainpool.emulator.jobs.replicas import Controls, Outcome, run_spec
from trainpool.emulator.jobs.runner import Runner, job_spec_rest
from trainpool.emulator.records.kinds import CUSTOM_JOBS
from trainpool.emulator.sweeps.stopping import EarlyStopping
from trainpool.emulator.sweeps.study_fields import notes
from trainpool.emulator.sweeps.suggestions import Params, Search
from trainpool.emulator.sweeps.trial_args import integer_valued, trial_spec
from trainpool.emulator.sweeps.trial_rules import (
    measurement,
    stopping_rule,
    trials_fail_job,
    trials_rule,
)
from trainpool.runtime.hypertune import MetricRecord, read_metrics

Trial = study_types.Trial

SWEEP_LABEL = "trainpool-emulator-sweep"
"""Label of a trial's CustomJob: the id of its HyperparameterTuningJob."""
TRIAL_LABEL = "trainpool-emulator-trial"
"""Label of a trial's CustomJob: its trial id."""
POLL_S = 0.1


def study_spec_rest(study_spec: study_types.StudySpec) -> dict[str, Any]:
    """The StudySpec as Vertex REST JSON: camelCase, enum names, no default values."""
    return study_types.StudySpec.to_dict(
        study_spec,
        preserving_proto_field_name=False,
        use_integers_for_enums=False,
        always_print_fields_with_no_presence=False,
    )


class TuningRun:
    """The state of one running sweep; the job record is updated from one thread only."""

    def __init__(self, runner: Runner, name: str, cancel: threading.Event) -> None:
        self.runner = runner
        self.name = name
        self.cancel = cancel
        job = runner.require(name)
        self.parent, _, self.job_id = name.rpartition("/hyperparameterTuningJobs/")
        self.display_name = job.display_name
        self.spec = job_spec_rest(job.trial_job_spec)
        study = study_spec_rest(job.study_spec)
        self.metric_id = study["metrics"][0]["metricId"]
        self.goal = study["metrics"][0].get("goal", "MAXIMIZE")
        self.selection = study.get("measurementSelectionType", "LAST_MEASUREMENT")
        self.search = Search(study, seed=int(name.rsplit("/", 1)[-1]))
        self.integral = integer_valued(study["parameters"])
        self.max_trials = job.max_trial_count
        self.parallel = max(1, job.parallel_trial_count)
        self.max_failed = job.max_failed_trial_count
        self.note = JobLog(runner.files(name).log)
        self.failed = 0
        self.succeeded = 0
        self.notes = notes(study)
        self.rule = stopping_rule(study)
        self.early = (
            EarlyStopping(runner, name, self.rule, self.metric_id, self.goal, self.note)
            if self.rule
            else None
        )
        self.started: dict[str, float] = {}
        """Each running trial's start, in real POSIX time (the trainer stamps its metrics so)."""

    def run(self) -> Outcome:
        self.note(f"search algorithm {self.search.note}")
        for line in self.notes:
            self.note(line)
        if self.rule is not None:
            self.note(f"automated stopping: {self.rule.describe()}")
        self.runner.set_state(self.name, JobState.JOB_STATE_RUNNING)
        running: dict[futures.Future[Outcome], tuple[int, str, str]] = {}
        started = 0
        exhausted = False
        failure: Outcome | None = None
        with futures.ThreadPoolExecutor(self.parallel) as pool:
            while True:
                while (
                    failure is None
                    and not exhausted
                    and not self.cancel.is_set()
                    and len(running) < self.parallel
                    and started < self.max_trials
                ):
                    asked = self.search.ask()
                    if asked is None:
                        exhausted = True
                        self.note(f"the grid has {started} points; no more trials to run")
                        break
                    started += 1
                    number, params = asked
                    trial_id = str(started)
                    job_name, controls = self._add_trial(trial_id, params)
                    future = pool.submit(self._run_trial, job_name, controls, trial_id, params)
                    running[future] = (number, trial_id, job_name)
                if not running:
                    break
                done, _ = futures.wait(running, POLL_S, futures.FIRST_COMPLETED)
                if self.cancel.is_set():
                    for _, _, job_name in running.values():
                        self.runner.cancel(job_name)
                for future in done:
                    number, trial_id, _ = running.pop(future)
                    failure = self._finish_trial(number, trial_id, future.result()) or failure
                if failure is not None:
                    self.cancel.set()
                elif self.early and not self.cancel.is_set():
                    self.early.check()
        if failure is not None:
            return failure
        if self.cancel.is_set():
            return Outcome("CANCELLED", CODE_CANCELLED, "CANCELED")
        return Outcome("SUCCEEDED")

    def _run_trial(
        self, job_name: str, controls: Controls, trial_id: str, params: Params
    ) -> Outcome:
        """Run the trial's CustomJob to its end, recorded on it."""
        try:
            self.runner.set_state(job_name, JobState.JOB_STATE_PENDING)
            outcome = run_spec(
                trial_spec(self.spec, params, self.integral),
                self.runner.context(self.name, trial_id),
                controls,
                on_started=lambda replicas: self.runner.record_groups(self.name, replicas),
                on_running=lambda: self.runner.set_state(job_name, JobState.JOB_STATE_RUNNING),
                kill=self.runner.kill,
                clock=self.runner.state.clock.monotonic,
            )
            self.runner.finish(job_name, outcome)
            return outcome
        finally:
            self.runner.unregister(job_name)

    def _add_trial(self, trial_id: str, params: Params) -> tuple[str, Controls]:
        """Store the trial and its CustomJob (QUEUED, reachable by cancel and preempt)."""
        spec = trial_spec(self.spec, params, self.integral)
        record = cj.CustomJob(
            display_name=f"{self.display_name}-trial-{trial_id}",
            job_spec=cj.CustomJobSpec.from_json(json.dumps(spec)),
            labels={SWEEP_LABEL: self.job_id, TRIAL_LABEL: trial_id},
        )
        job_name = self.runner.create(CUSTOM_JOBS, self.parent, record).name
        controls = self.runner.register(job_name)
        trial_dir = self.runner.files(self.name, trial_id).dir
        trial_dir.mkdir(parents=True, exist_ok=True)
        link = self.runner.files(job_name).dir
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(trial_dir, link.parent))
        started = self.runner.state.clock.now()
        self.started[trial_id] = time.time()
        trial = Trial(
            id=trial_id,
            state=Trial.State.ACTIVE,
            parameters=[Trial.Parameter(parameter_id=k, value=v) for k, v in params.items()],
            start_time=started,
            custom_job=job_name,
        )
        self.runner.update(self.name, lambda job: job.trials.append(trial))
        if self.early:
            metric_file = self.runner.files(self.name, trial_id).metric_file()
            self.early.start(trial_id, job_name, metric_file, self.started[trial_id])
        self.note(f"trial {trial_id} started with {params} as {job_name}")
        return job_name, controls

    def _finish_trial(self, number: int, trial_id: str, outcome: Outcome) -> Outcome | None:
        """Record the trial; the job's failure when this trial makes too many failures."""
        metric_file = self.runner.files(self.name, trial_id).metric_file()
        result = None
        reason = outcome.message
        unreadable = ""
        try:
            records = read_metrics(str(metric_file))
        except ValueError as err:  # a line the trainer wrote is not a measurement
            records, unreadable = [], str(err)
        started = self.started.pop(trial_id)
        reported = records[-1].global_step if records else 0
        early = False
        if self.early:
            records, early = self.early.end(trial_id, outcome.state, records, started)
        if outcome.state == "SUCCEEDED" or early:
            result = measurement(records, self.metric_id, self.goal, self.selection)
            if unreadable:
                reason = f"The trial's metric file cannot be read: {unreadable}"
            elif result is None:
                reason = (
                    f"The trial reported no value of metric {self.metric_id!r} "
                    f"(read from {metric_file})."
                )
        self.search.tell(number, None if result is None else result[0])
        ended = self.runner.state.clock.now()

        def record(job: Any) -> None:
            trial = job.trials[int(trial_id) - 1]
            trial.end_time = ended
            trial.measurements = [step(r, started) for r in records]
            if result is None:
                trial.state = Trial.State.INFEASIBLE
                trial.infeasible_reason = reason
                return
            trial.state = Trial.State.SUCCEEDED
            elapsed = ended - datetime.fromisoformat(trial.start_time.isoformat())
            trial.final_measurement = study_types.Measurement(
                step_count=result[1],
                elapsed_duration=duration_pb2.Duration(seconds=int(elapsed.total_seconds())),
                metrics=[{"metric_id": self.metric_id, "value": result[0]}],
            )

        self.runner.update(self.name, record)
        if result is not None and early:
            self.succeeded += 1
            self.note(
                f"trial {trial_id} SUCCEEDED, stopped early after step {reported}: "
                f"{self.metric_id}={result[0]} ({self.selection})"
            )
            return None
        if result is not None:
            self.succeeded += 1
            if self.early:
                self.early.watch.complete(records, started, result[0])
            self.note(f"trial {trial_id} SUCCEEDED: {self.metric_id}={result[0]}")
            return None
        if outcome.state == "CANCELLED":
            self.note(f"trial {trial_id} stopped")
            return None
        self.failed += 1
        self.note(f"trial {trial_id} failed: {reason}")
        if not trials_fail_job(self.failed, self.succeeded, self.max_failed, self.max_trials):
            return None
        return Outcome(
            "FAILED",
            CODE_FAILED_PRECONDITION,
            f"{self.failed} trial(s) failed and {self.succeeded} succeeded; "
            f"{trials_rule(self.max_failed, self.max_trials)}. Trial {trial_id}: {reason}",
        )


def step(record: MetricRecord, started: float) -> study_types.Measurement:
    """One reported step as a ``Measurement``: every metric of the record, its step, and
    the time since the trial started (``started``: the real POSIX time the trial started;
    the record's timestamp is the trainer's, in real time)."""
    elapsed = max(0.0, record.timestamp - started)
    return study_types.Measurement(
        step_count=record.global_step,
        elapsed_duration=timedelta(seconds=elapsed),
        metrics=[{"metric_id": k, "value": v} for k, v in record.values.items()],
    )


def run_tuning_job(runner: Runner, name: str, cancel: threading.Event) -> None:
    """The life of one HyperparameterTuningJob."""
    runner.set_state(name, JobState.JOB_STATE_PENDING)
    runner.finish(name, TuningRun(runner, name, cancel).run())
