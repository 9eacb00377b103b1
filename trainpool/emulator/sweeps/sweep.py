"""Running a HyperparameterTuningJob: each trial a CustomJob of its own, truly in parallel.

A sweep has no thread: :class:`RunningSweep` acts when something happened (it started, a
trial's CustomJob ended, Cancel, a look at the running trials fell due), one call at a time
on the job engine's pool. Its trials run on the engine like any CustomJob, and count
against the machine's replica quota (a trial waits QUEUED for its slots).

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
early by its rule (:mod:`trainpool.emulator.sweeps.early_stopping`: STOPPING, then SUCCEEDED with
the selected measurement). Study fields the emulator does not apply are named in the job
log (:mod:`trainpool.emulator.sweeps.unapplied_study_fields`).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import study as study_types
from google.cloud.aiplatform_v1.types.job_state import JobState

from trainpool.cluster_env import layout
from trainpool.emulator.jobs.controls import Controls
from trainpool.emulator.jobs.failure_rules import CODE_CANCELLED, CODE_FAILED_PRECONDITION
from trainpool.emulator.jobs.job_run import error_outcome
from trainpool.emulator.jobs.logs import JobLog
from trainpool.emulator.jobs.manager import JobManager
from trainpool.emulator.jobs.outcomes import Outcome
from trainpool.emulator.jobs.web_access import SCHEME
from trainpool.emulator.records.kinds import CUSTOM_JOBS
from trainpool.emulator.sweeps.early_stopping import EarlyStopping
from trainpool.emulator.sweeps.suggestions import Params, Search
from trainpool.emulator.sweeps.trial_args import integer_valued, trial_spec
from trainpool.emulator.sweeps.trial_results import read_records, recorder
from trainpool.emulator.sweeps.trial_rules import (
    measurement,
    stopping_rule,
    trials_fail_job,
    trials_rule,
)
from trainpool.emulator.sweeps.unapplied_study_fields import notes
from trainpool.spec.normalize import job_spec_rest

Trial = study_types.Trial

SWEEP_LABEL = "trainpool-emulator-sweep"
"""Label of a trial's CustomJob: the id of its HyperparameterTuningJob."""
TRIAL_LABEL = "trainpool-emulator-trial"
"""Label of a trial's CustomJob: its trial id."""
POLL_S = 0.1
"""How often a sweep with a stopping rule looks at its running trials (the watch reads a
trial's metric file at most every ``stopping.WATCH_S``)."""


def study_spec_rest(study_spec: study_types.StudySpec) -> dict[str, Any]:
    """The StudySpec as Vertex REST JSON: camelCase, enum names, no default values."""
    return study_types.StudySpec.to_dict(
        study_spec,
        preserving_proto_field_name=False,
        use_integers_for_enums=False,
        always_print_fields_with_no_presence=False,
    )


class RunningSweep:
    """The state of one running sweep; it acts through its serial queue only, so the job
    record is updated from one call at a time."""

    def __init__(self, manager: JobManager, name: str, controls: Controls) -> None:
        self.manager = manager
        self.name = name
        self.controls = controls
        self.cancel = controls.cancel
        job = manager.require(name)
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
        self.note = JobLog(manager.files(name).log)
        self.failed = 0
        self.succeeded = 0
        self.notes = notes(study)
        self.rule = stopping_rule(study)
        self.early = (
            EarlyStopping(manager, name, self.rule, self.metric_id, self.goal, self.note)
            if self.rule
            else None
        )
        self.started: dict[str, float] = {}
        """Each running trial's start, in real POSIX time (the trainer stamps its metrics so)."""
        self.running: dict[str, tuple[int, str]] = {}  # trial id -> (search number, job)
        self.launched = 0
        self.exhausted = False
        self.failure: Outcome | None = None
        self.ended = False
        self.serial = manager.engine.serial(self._crashed)

    def start(self) -> None:
        """Begin the sweep (from any thread): it runs on the engine from now on."""
        self.serial.send(self._begin)

    def _begin(self) -> None:
        self.manager.set_state(self.name, JobState.JOB_STATE_PENDING)
        self.note(f"search algorithm {self.search.note}")
        for line in self.notes:
            self.note(line)
        if self.rule is not None:
            self.note(f"automated stopping: {self.rule.describe()}")
        self.manager.set_state(self.name, JobState.JOB_STATE_RUNNING)
        self.cancel.listen(lambda: self.serial.send(self._cancelled))
        self._fill()
        if self.early is not None:
            self.manager.engine.timers.after(POLL_S, lambda: self.serial.send(self._look))

    def _fill(self) -> None:
        """Start trials while the study allows; end the sweep when none runs any more."""
        while (
            self.failure is None
            and not self.exhausted
            and not self.cancel.is_set()
            and len(self.running) < self.parallel
            and self.launched < self.max_trials
        ):
            asked = self.search.ask()
            if asked is None:
                self.exhausted = True
                self.note(f"the grid has {self.launched} points; no more trials to run")
                break
            self.launched += 1
            number, params = asked
            trial_id = str(self.launched)
            spec = trial_spec(self.spec, params, self.integral)
            job_name, controls = self._add_trial(trial_id, params, spec)
            self.running[trial_id] = (number, job_name)

            def done(outcome: Outcome, trial_id: str = trial_id) -> None:
                self.serial.send(lambda: self._trial_done(trial_id, outcome))

            self.manager.launch(
                job_name,
                spec,
                self.manager.context(self.name, trial_id),
                controls,
                done,
            )
        if not self.running:
            self._end()

    def _trial_done(self, trial_id: str, outcome: Outcome) -> None:
        number, _ = self.running.pop(trial_id)
        self.failure = self._finish_trial(number, trial_id, outcome) or self.failure
        if self.failure is not None:
            self.cancel.set()  # the listener cancels the running trials
        self._fill()

    def _cancelled(self) -> None:
        for _, job_name in self.running.values():
            self.manager.cancel(job_name)
        if not self.running:
            self._end()

    def _look(self) -> None:
        """The stopping rule's look at the running trials; the next one is scheduled."""
        if self.ended:
            return
        if self.early is not None and not self.cancel.is_set() and self.failure is None:
            self.early.check()
        self.manager.engine.timers.after(POLL_S, lambda: self.serial.send(self._look))

    def _crashed(self, err: BaseException) -> None:
        """A call of the sweep raised: it fails (its disk named when it is full)."""
        if self.failure is None:
            self.failure = error_outcome(err, self.manager.state.root)
        self.cancel.set()
        self._cancelled()

    def _end(self) -> None:
        if self.ended:
            return
        self.ended = True
        if self.failure is not None:
            outcome = self.failure
        elif self.cancel.is_set():
            outcome = Outcome("CANCELLED", CODE_CANCELLED, "CANCELED")
        else:
            outcome = Outcome("SUCCEEDED")
        try:
            self.manager.finish(self.name, outcome)
        finally:
            self.manager.unregister(self.name)

    def _add_trial(
        self, trial_id: str, params: Params, spec: dict[str, Any]
    ) -> tuple[str, Controls]:
        """Store the trial and its CustomJob (QUEUED, reachable by cancel and preempt)."""
        record = cj.CustomJob(
            display_name=f"{self.display_name}-trial-{trial_id}",
            job_spec=cj.CustomJobSpec.from_json(json.dumps(spec)),
            labels={SWEEP_LABEL: self.job_id, TRIAL_LABEL: trial_id},
        )
        job_name = self.manager.create(CUSTOM_JOBS, self.parent, record).name
        controls = self.manager.register(job_name)
        trial_dir = self.manager.files(self.name, trial_id).dir
        trial_dir.mkdir(parents=True, exist_ok=True)
        link = self.manager.files(job_name).dir
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(trial_dir, link.parent))
        started = self.manager.state.clock.now()
        self.started[trial_id] = time.time()
        trial = Trial(
            id=trial_id,
            state=Trial.State.ACTIVE,
            parameters=[Trial.Parameter(parameter_id=k, value=v) for k, v in params.items()],
            start_time=started,
            custom_job=job_name,
            web_access_uris=self._web_access(trial_id, spec),
        )
        self.manager.update(self.name, lambda job: job.trials.append(trial))
        if self.early:
            metric_file = self.manager.files(self.name, trial_id).metric_file()
            self.early.start(trial_id, job_name, metric_file, self.started[trial_id])
        self.note(f"trial {trial_id} started with {params} as {job_name}")
        return job_name, controls

    def _web_access(self, trial_id: str, spec: dict[str, Any]) -> dict[str, str]:
        """The trial's shells when ``trialJobSpec.enableWebAccess`` ("Only available if this
        trial is part of a HyperparameterTuningJob and the job's
        trial_job_spec.enable_web_access field is true", ``Trial.web_access_uris``)."""
        if not spec.get("enableWebAccess"):
            return {}
        files = self.manager.files(self.name, trial_id)
        pools = layout.pool_specs(spec)
        return {
            f"workerpool{pool}-{index}": f"{SCHEME}{files.web_access(f'workerpool{pool}-{index}')}"
            for pool, index in layout.replicas(spec)
            if not (pool == 2 and layout.is_reduction_server(pools[pool]))
        }

    def _finish_trial(self, number: int, trial_id: str, outcome: Outcome) -> Outcome | None:
        """Record the trial; the job's failure when this trial makes too many failures."""
        metric_file = self.manager.files(self.name, trial_id).metric_file()
        result = None
        reason = outcome.message
        records, unreadable = read_records(metric_file)
        started = self.started.pop(trial_id)
        early = False
        if self.early:
            records, early = self.early.end(trial_id, outcome.state, records, started)
        # the last step kept: a report the trial wrote between its stop and its end is not one
        # of its measurements (early.end keeps those up to the stop), so the log does not name it
        reported = records[-1].global_step if records else 0
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
        ended = self.manager.state.clock.now()
        record = recorder(trial_id, records, result, reason, self.metric_id, ended, started)
        self.manager.update(self.name, record)
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


def run_tuning_job(manager: JobManager, name: str) -> None:
    """Start the life of stored HyperparameterTuningJob ``name`` on the job engine."""
    RunningSweep(manager, name, manager.register(name)).start()
