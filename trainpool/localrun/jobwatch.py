"""Jobs, trials and replica logs of a local run, polled from the emulator.

The pipeline's tasks create CustomJobs and HyperparameterTuningJobs on the
emulator; this lists the ones created since the run started (through
``trainpool.vertex.clients.job_client``) and reads the tail of each replica's
log under ``<root>/jobs/<job id>/``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

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


def replica_tails(root: Path, job_id: str) -> dict[str, str]:
    """``{replica name: last log line}`` for the job's replica logs under ``root``."""
    folder = root / "jobs" / job_id
    if not folder.is_dir():
        return {}
    logs = sorted(folder.glob("workerpool*-*.log"))
    return {log.stem: _last_line(log) for log in logs}


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

    def __init__(self, root: Path, project: str, location: str, since: datetime) -> None:
        self.root = root
        self.parent = f"projects/{project}/locations/{location}"
        self.location = location
        self.since = since
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
                    old[job.name] = self._view(job, "CustomJob", [])
            if tuning is not None:
                for job in tuning:
                    trials = [_trial(t) for t in job.trials]
                    old[job.name] = self._view(job, "HyperparameterTuningJob", trials)
            self._jobs = sorted(old.values(), key=lambda v: v.name)

    def _list(self, method: Any) -> list[Any] | None:
        from google.api_core import exceptions

        try:
            return [job for job in method(parent=self.parent) if self._new(job)]
        except (exceptions.GoogleAPICallError, exceptions.RetryError):
            return None

    def _new(self, job: Any) -> bool:
        created = job.create_time
        return created is None or created.timestamp() >= self.since.timestamp() - 1

    def _view(self, job: Any, kind: str, trials: list[TrialView]) -> JobView:
        job_id = job.name.rsplit("/", 1)[-1]
        return JobView(
            name=job.name,
            display_name=job.display_name,
            kind=kind,
            state=_short_state(job.state),
            replicas=replica_tails(self.root, job_id),
            trials=trials,
        )

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            self.poll()
