"""CustomJob and HyperparameterTuningJob records in SQLite, as serialized protos.

A record is the whole proto (``CustomJob.serialize``), so every field the
client sent comes back unchanged. ``state`` and ``display_name`` are indexed
columns too, and labels rows of ``jobs_labels``, so a List answers its filter and
page from indexes and deserializes only the page it returns: its cost does not grow
with the number of stored jobs.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import hyperparameter_tuning_job as hptj
from google.cloud.aiplatform_v1.types.job_state import JobState

from trainpool.emulator.list_filter import Condition, to_sql
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
CREATE TABLE IF NOT EXISTS jobs_labels (
  name TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (name, key)
);
CREATE INDEX IF NOT EXISTS jobs_labels_by_value ON jobs_labels (key, value, name);
"""
_COLUMNS = """
ALTER TABLE jobs ADD COLUMN display_name TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (kind, parent, state, seq);
CREATE INDEX IF NOT EXISTS jobs_by_display_name ON jobs (kind, parent, display_name, seq);
"""


def now() -> datetime:
    return datetime.now(timezone.utc)


def _state_value(name: str) -> int:
    member = JobState.__members__.get(name)
    return int(member) if member is not None else -1


def _insert_labels(conn: sqlite3.Connection, job: Any) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO jobs_labels (name, key, value) VALUES (?, ?, ?)",
        [(job.name, key, value) for key, value in job.labels.items()],
    )


class JobStore:
    """Insert, read, update and list job records; updates are read-modify-write under one lock."""

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.db = state.db
        self.db.executescript(_SCHEMA)
        self._lock = threading.RLock()
        self._add_columns()

    def _add_columns(self) -> None:
        """Give a store written before the indexed columns its ``display_name`` and labels."""
        columns = {row["name"] for row in self.db.execute("PRAGMA table_info(jobs)")}
        if "display_name" in columns:
            return
        self.db.executescript(_COLUMNS)
        with self.db.transaction() as conn:
            for row in conn.execute("SELECT name, kind, proto FROM jobs").fetchall():
                job = KINDS[row["kind"]].deserialize(row["proto"])
                conn.execute(
                    "UPDATE jobs SET display_name = ? WHERE name = ?", (job.display_name, job.name)
                )
                _insert_labels(conn, job)

    def insert(self, kind: str, parent: str, job: Any) -> Any:
        """Give ``job`` its name, QUEUED state and times, store it, and return it."""
        job_id = self.state.new_id("job")
        stamp = now()
        job.name = f"{parent}/{kind}/{job_id}"
        job.state = JobState.JOB_STATE_QUEUED
        job.create_time = stamp
        job.update_time = stamp
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO jobs (name, kind, parent, seq, state, display_name, proto) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    job.name,
                    kind,
                    parent,
                    int(job_id),
                    int(job.state),
                    job.display_name,
                    KINDS[kind].serialize(job),
                ),
            )
            _insert_labels(conn, job)
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

    def list_jobs(
        self,
        kind: str,
        parent: str,
        after_seq: int = 0,
        limit: int = 0,
        conditions: list[Condition] | None = None,
    ) -> list[tuple[int, Any]]:
        """``(seq, job)`` of ``kind`` under ``parent`` that match ``conditions``, in creation
        order, starting after ``after_seq``; at most ``limit`` (0: all)."""
        where, params = to_sql(conditions or [], "jobs", _state_value)
        sql = f"SELECT seq, proto FROM jobs WHERE kind = ? AND parent = ? AND seq > ?{where}"
        sql += " ORDER BY seq" + (" LIMIT ?" if limit else "")
        args: list[Any] = [kind, parent, after_seq, *params] + ([limit] if limit else [])
        return [
            (int(row["seq"]), KINDS[kind].deserialize(row["proto"]))
            for row in self.db.execute(sql, args)
        ]

    def delete(self, name: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM jobs WHERE name = ?", (name,))
            conn.execute("DELETE FROM jobs_labels WHERE name = ?", (name,))

    def unfinished(self) -> list[str]:
        """Names of jobs in a state that is not terminal."""
        marks = ",".join("?" * len(TERMINAL))
        rows = self.db.execute(
            f"SELECT name FROM jobs WHERE state NOT IN ({marks}) ORDER BY seq",
            [int(s) for s in TERMINAL],
        )
        return [row["name"] for row in rows]
