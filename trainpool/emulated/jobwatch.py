"""Jobs, trials and replica logs of a local run, polled from the emulator.

The pipeline's tasks create CustomJobs and HyperparameterTuningJobs on the
emulator, labelled ``trainpool-local-run=<run id>`` (the run sets
``VERTEX_AI_PIPELINES_RUN_LABELS`` and the launchers copy those labels into their
jobs, as on Vertex). This lists the ones with the run's label, a filter the
emulator answers from an index, so a poll costs the same whatever the root's
history (through ``trainpool.vertex.clients.job_client``), and reads the tail of
each replica's log (:class:`trainpool.home.JobFiles`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainpool.home import Home
from trainpool.kfp_local.execute import RUN_LABEL
from trainpool.spec.states import job_is_final
from trainpool.vertex import clients

POLL_S = 1.0


@dataclass(frozen=True)
class TrialView:
    trial_id: str
    state: str
    parameters: dict[str, Any]
    metric: float | None


@dataclass(frozen=True)
class JobView:
    name: str
    display_name: str
    kind: str
    state: str
    replicas: dict[str, str] = field(default_factory=dict)  # replica name -> last log line
    trials: list[TrialView] = field(default_factory=list)
    base_output: str = ""
    """``baseOutputDirectory`` of the job (of each trial's job, for a sweep)."""
    goal: str = ""
    """A sweep's goal for its first metric: MAXIMIZE or MINIMIZE."""

    @property
    def job_id(self) -> str:
        return self.name.rsplit("/", 1)[-1]


def _short_state(state: Any) -> str:
    return str(getattr(state, "name", state)).removeprefix("JOB_STATE_").removeprefix("STATE_")


def _last_line(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - 2048))
            lines = handle.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""


def replica_tails(home: Home, job_id: str) -> dict[str, str]:
    """``{replica name: last log line}`` for the job's replica logs in ``home``."""
    return {log.stem: _last_line(log) for log in home.job(job_id).replica_logs()}


def _trial(trial: Any) -> TrialView:
    metrics = list(trial.final_measurement.metrics) if trial.final_measurement else []
    return TrialView(
        trial_id=str(trial.id),
        state=_short_state(trial.state),
        parameters={p.parameter_id: p.value for p in trial.parameters},
        metric=float(metrics[0].value) if metrics else None,
    )


class JobWatch:
    """Polls the emulator in a background thread; :meth:`snapshot` is safe from any thread."""

    def __init__(self, home: Home, project: str, location: str, run_id: str) -> None:
        self.home = home
        self.parent = f"projects/{project}/locations/{location}"
        self.location = location
        self.filter = f'labels.{RUN_LABEL}="{run_id}"'
        self._jobs: list[JobView] = []
        self._client: Any = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="trainpool-jobwatch", daemon=True)

    def __enter__(self) -> JobWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.poll()

    def snapshot(self) -> list[JobView]:
        with self._lock:
            return list(self._jobs)

    def poll(self) -> None:
        """One poll; a server that is gone or lacks a method leaves that part of the view as is."""
        if self._client is None:
            self._client = clients.job_client(self.location)
        custom = self._list(self._client.list_custom_jobs)
        tuning = self._list(self._client.list_hyperparameter_tuning_jobs)
        with self._lock:
            old = {view.name: view for view in self._jobs}
            if custom is not None:
                for job in custom:
                    old[job.name] = self._view(job, "CustomJob", job.job_spec, [])
            if tuning is not None:
                for job in tuning:
                    trials = [_trial(t) for t in job.trials]
                    view = self._view(job, "HyperparameterTuningJob", job.trial_job_spec, trials)
                    metrics = list(job.study_spec.metrics)
                    goal = (
                        _short_state(metrics[0].goal).removeprefix("GOAL_TYPE_") if metrics else ""
                    )
                    old[job.name] = JobView(**{**view.__dict__, "goal": goal})
            self._jobs = sorted(old.values(), key=lambda v: v.name)

    def cancel_unfinished(self, wait_s: float = 30.0) -> None:
        """Cancel every job of the run that has not ended, and wait up to ``wait_s`` for them."""
        from google.api_core import exceptions

        self.poll()
        cancels = {
            "CustomJob": self._client.cancel_custom_job,
            "HyperparameterTuningJob": self._client.cancel_hyperparameter_tuning_job,
        }
        for view in self.snapshot():
            if not job_is_final(f"JOB_STATE_{view.state}"):
                try:
                    cancels[view.kind](name=view.name)
                except exceptions.GoogleAPICallError:
                    pass  # ended meanwhile, or the server is gone: nothing left to cancel
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            self.poll()
            if all(job_is_final(f"JOB_STATE_{v.state}") for v in self.snapshot()):
                return
            time.sleep(0.1)

    def _list(self, method: Any) -> list[Any] | None:
        from google.api_core import exceptions

        try:
            return list(method(request={"parent": self.parent, "filter": self.filter}))
        except (exceptions.GoogleAPICallError, exceptions.RetryError):
            return None

    def _view(self, job: Any, kind: str, spec: Any, trials: list[TrialView]) -> JobView:
        job_id = job.name.rsplit("/", 1)[-1]
        return JobView(
            name=job.name,
            display_name=job.display_name,
            kind=kind,
            state=_short_state(job.state),
            replicas=replica_tails(self.home, job_id),
            trials=trials,
            base_output=spec.base_output_directory.output_uri_prefix,
        )

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            self.poll()
