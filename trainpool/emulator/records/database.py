"""One SQLite file per emulator root, behind a lock, and the ids it hands out.

One connection is shared by every thread behind a lock, so calls never interleave:
``execute`` runs one statement in its own transaction, ``transaction()`` several,
committed together. ``new_id(sequence)`` hands out "1000", "1001", ... per sequence, and
survives restarts; ``setting(key)`` / ``set_setting(key, value)`` keep a few values of the
emulator itself (the clock's offset).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_IDS_TABLE = """
CREATE TABLE IF NOT EXISTS ids (name TEXT PRIMARY KEY, next INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
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
        """Hold the lock and one transaction; commit on success, roll back on error."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

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

    def setting(self, key: str) -> str | None:
        """The stored value of setting ``key``, or None."""
        rows = self.execute("SELECT value FROM settings WHERE key = ?", (key,))
        return str(rows[0]["value"]) if rows else None

    def set_setting(self, key: str, value: str) -> None:
        self.execute(
            "INSERT INTO settings (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def tables(self) -> set[str]:
        rows = self.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {row["name"] for row in rows}

    def close(self) -> None:
        with self._lock:
            self._conn.close()
