"""One SQLite file per emulator root, behind a lock, and the ids it hands out.

One connection is shared by every thread behind a lock, so calls never interleave:
``execute`` runs one statement in its own transaction, ``transaction()`` several,
committed together. ``new_id(sequence)`` hands out "1000", "1001", ... per sequence, and
survives restarts.

A write the disk cannot hold (SQLite's "database or disk is full") raises :class:`DiskFull`,
an ``OSError`` (``ENOSPC``) naming the store's disk; :meth:`Database.require_space` raises it
before anything is written when the disk has less than :data:`MIN_FREE_BYTES` left (a
Create must create nothing there: the services answer RESOURCE_EXHAUSTED).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_IDS_TABLE = "CREATE TABLE IF NOT EXISTS ids (name TEXT PRIMARY KEY, next INTEGER NOT NULL);"
FIRST_ID = 1000
MIN_FREE_BYTES = 256 * 1024
"""Below this much free space the store's disk counts as full: no new job is created."""
_FULL = (errno.ENOSPC, errno.EDQUOT)


class DiskFull(OSError):
    """The disk of the store is full; ``str()`` names it and says what could not be written."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(
            errno.ENOSPC,
            f"No space left on the disk of the emulator's store {path}: {detail}. Free some "
            "space there (old jobs' logs and outputs) and try again",
        )


def is_disk_full(err: BaseException) -> bool:
    """Whether ``err`` says a disk is full (ENOSPC, EDQUOT, SQLite's SQLITE_FULL)."""
    if isinstance(err, OSError) and err.errno in _FULL:
        return True
    code = getattr(err, "sqlite_errorcode", None)
    return isinstance(err, sqlite3.Error) and (
        code == sqlite3.SQLITE_FULL or "database or disk is full" in str(err)
    )


class Database:
    """One SQLite file behind a lock; safe to call from any thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_IDS_TABLE)

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
        """Hold the lock and one transaction; commit on success, roll back on error; a full
        disk raises :class:`DiskFull`."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.Error as err:
                if not is_disk_full(err):
                    raise
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise DiskFull(
                    self.path.parent, f"the database could not be written ({err})"
                ) from err

    def require_space(self) -> None:
        """Raise :class:`DiskFull` when the store's disk has less than :data:`MIN_FREE_BYTES`."""
        try:
            info = os.statvfs(self.path.parent)
        except OSError:
            return
        free = info.f_bavail * info.f_frsize
        if free < MIN_FREE_BYTES:
            raise DiskFull(self.path.parent, f"{free} bytes free")

    def new_id(self, sequence: str = "resource") -> str:
        """The next id of ``sequence`` as a string ("1000", "1001", ...); survives restarts."""
        with self.transaction() as conn:
            row = conn.execute("SELECT next FROM ids WHERE name = ?", (sequence,)).fetchone()
            value = FIRST_ID if row is None else int(row["next"])
            conn.execute(
                "INSERT INTO ids (name, next) VALUES (?, ?) "
                "ON CONFLICT(name) DO UPDATE SET next = excluded.next",
                (sequence, value + 1),
            )
        return str(value)

    def tables(self) -> set[str]:
        rows = self.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {row["name"] for row in rows}

    def close(self) -> None:
        with self._lock:
            self._conn.close()
