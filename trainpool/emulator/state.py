"""What every emulator service shares: the root directory, SQLite, ids, faults, stop hooks.

A service module receives one :class:`EmulatorState`. It creates its own tables
with ``state.db.executescript("CREATE TABLE IF NOT EXISTS ...")`` and reads and
writes them with ``state.db.execute`` (one statement, committed) or
``state.db.transaction()`` (several statements, committed together). One
connection is shared by every thread behind a lock, so calls never interleave.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainpool.emulator.faults import Faults

DB_NAME = "emulator.sqlite"

_IDS_TABLE = """
CREATE TABLE IF NOT EXISTS ids (name TEXT PRIMARY KEY, next INTEGER NOT NULL);
"""
FIRST_ID = 1000


class Database:
    """One SQLite file behind a lock; safe to call from any thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")

    def executescript(self, script: str) -> None:
        """Run DDL (``CREATE TABLE IF NOT EXISTS ...``)."""
        with self._lock:
            self._conn.executescript(script)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run one statement in its own transaction and return its rows."""
        with self.transaction() as conn:
            return conn.execute(sql, params).fetchall()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Hold the lock and one transaction; commit on success, roll back on error."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()


@dataclass
class EmulatorState:
    """The root directory, the database, and the id allocator shared by all services."""

    root: Path
    faults: Faults = field(default_factory=Faults)
    address: str = ""
    """``127.0.0.1:PORT`` once the server listens (services that start clients need it)."""
    db: Database = field(init=False)
    _stop_hooks: list[Callable[[], None]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.db = Database(self.root / DB_NAME)
        self.db.executescript(_IDS_TABLE)

    def new_id(self, sequence: str = "resource") -> str:
        """The next id of ``sequence`` as a string ("1000", "1001", ...); survives restarts."""
        with self.db.transaction() as conn:
            row = conn.execute("SELECT next FROM ids WHERE name = ?", (sequence,)).fetchone()
            value = FIRST_ID if row is None else int(row["next"])
            conn.execute(
                "INSERT INTO ids (name, next) VALUES (?, ?) "
                "ON CONFLICT(name) DO UPDATE SET next = excluded.next",
                (sequence, value + 1),
            )
        return str(value)

    def on_stop(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` when the emulator stops (last registered, first called)."""
        self._stop_hooks.append(hook)

    def close(self) -> None:
        """Run the stop hooks, then close the database."""
        while self._stop_hooks:
            self._stop_hooks.pop()()
        self.db.close()

    @property
    def gcs_root(self) -> Path:
        """``gs://BUCKET/PATH`` lives at ``gcs_root / BUCKET / PATH``."""
        return self.root / "gcs"

    def jobs_dir(self, job_id: str) -> Path:
        """Where the logs and files of job ``job_id`` go."""
        return self.root / "jobs" / job_id
