"""CustomJob and HyperparameterTuningJob records in SQLite, as serialized protos.

A record is the whole proto (``CustomJob.serialize``), so every field the
client sent comes back unchanged; ``state`` is a column too, for listing and
for finding the jobs a crashed server left running.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import hyperparameter_tuning_job as hptj
from google.cloud.aiplatform_v1.types.job_state import JobState

from trainpool.emulator.state import EmulatorState
from trainpool.spec.states import FINAL_JOB_STATES

CUSTOM = "customJobs"
TUNING = "hyperparameterTuningJobs"
KINDS: dict[str, Any] = {CUSTOM: cj.CustomJob, TUNING: hptj.HyperparameterTuningJob}

TERMINAL = frozenset(getattr(JobState, name) for name in FINAL_JOB_STATES)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
  name TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  parent TEXT NOT NULL,
  seq INTEGER NOT NULL,
  state INTEGER NOT NULL,
  proto BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_parent ON jobs (kind, parent, seq);
"""


def now() -> datetime:
    return datetime.now(timezone.utc)


class JobStore:
    """Insert, read, update and list job records; updates are read-modify-write under one lock."""

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.db = state.db
        self.db.executescript(_SCHEMA)
        self._lock = threading.RLock()

    def insert(self, kind: str, parent: str, job: Any) -> Any:
        """Give ``job`` its name, QUEUED state and times, store it, and return it."""
        job_id = self.state.new_id("job")
        stamp = now()
        job.name = f"{parent}/{kind}/{job_id}"
        job.state = JobState.JOB_STATE_QUEUED
        job.create_time = stamp
        job.update_time = stamp
        self.db.execute(
            "INSERT INTO jobs (name, kind, parent, seq, state, proto) VALUES (?, ?, ?, ?, ?, ?)",
            (job.name, kind, parent, int(job_id), int(job.state), KINDS[kind].serialize(job)),
        )
        return job

    def get(self, name: str) -> Any | None:
        rows = self.db.execute("SELECT kind, proto FROM jobs WHERE name = ?", (name,))
        if not rows:
            return None
        return KINDS[rows[0]["kind"]].deserialize(rows[0]["proto"])

    def require(self, name: str) -> Any:
        """The stored job; KeyError when there is none."""
        job = self.get(name)
        if job is None:
            raise KeyError(name)
        return job

    def update(self, name: str, change: Callable[[Any], None]) -> Any:
        """Apply ``change`` to the stored job, stamp ``update_time``, store and return it."""
        with self._lock:
            job = self.require(name)
            change(job)
            job.update_time = now()
            kind = name.split("/")[-2]
            self.db.execute(
                "UPDATE jobs SET state = ?, proto = ? WHERE name = ?",
                (int(job.state), KINDS[kind].serialize(job), name),
            )
            return job

    def list_jobs(self, kind: str, parent: str, after_seq: int = 0, limit: int = 0) -> list[Any]:
        """Jobs of ``kind`` under ``parent`` in creation order, starting after ``after_seq``."""
        sql = "SELECT proto FROM jobs WHERE kind = ? AND parent = ? AND seq > ? ORDER BY seq"
        params: list[Any] = [kind, parent, after_seq]
        if limit:
            sql += " LIMIT ?"
            params.append(limit)
        return [KINDS[kind].deserialize(row["proto"]) for row in self.db.execute(sql, params)]

    def delete(self, name: str) -> None:
        self.db.execute("DELETE FROM jobs WHERE name = ?", (name,))

    def unfinished(self) -> list[str]:
        """Names of jobs in a state that is not terminal."""
        marks = ",".join("?" * len(TERMINAL))
        rows = self.db.execute(
            f"SELECT name FROM jobs WHERE state NOT IN ({marks}) ORDER BY seq",
            [int(s) for s in TERMINAL],
        )
        return [row["name"] for row in rows]
