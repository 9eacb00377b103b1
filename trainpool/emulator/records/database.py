"""One SQLite file per emulator root, behind a lock, and the ids it hands out.

One connection writes, shared by every thread behind a lock, so writes never interleave:
``execute`` runs one statement in its own transaction, ``transaction()`` several,
committed together; ``write(fn)`` runs ``fn(conn)`` committed together with the writes
other threads wait to make (group commit: the hot writes, a record's insert and update).
``read`` runs a query on a reading connection borrowed for it (WAL lets readers go on while
a write commits), so a Get or a List never waits for the writers' lock: one kept idle, else a
new one, given back after, at most :data:`READERS_KEPT` kept. So the connections open follow
the reads in flight, not the threads that ever read (the REST door's threads come and go with
its connections; a connection of each thread's own stayed open, two file descriptors and a
page cache, after its thread ended). WAL checkpoints (which copy the log into the file and
sync it) run every :data:`CHECKPOINT_S` on a thread of their own, not inside a writer's
commit.
``new_id(sequence)`` hands out "1000", "1001", ... per sequence, and survives restarts;
``take_id(sequence)`` hands one out from memory, to be stored with the record it names
(``keep_id(conn, sequence, id)`` in the same transaction), so a Create takes the writers'
lock once. ``setting(key)`` / ``set_setting(key, value)`` keep a few values of the emulator
itself (the clock's offset).

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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

_IDS_TABLE = """
CREATE TABLE IF NOT EXISTS ids (name TEXT PRIMARY KEY, next INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
FIRST_ID = 1000
CHECKPOINT_S = 1.0
READERS_KEPT = 8
"""Idle reading connections kept for the next reads (the gRPC server's 8 threads' worth)."""
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


def low_space(path: Path | str) -> int | None:
    """The bytes free on the disk of ``path`` when fewer than :data:`MIN_FREE_BYTES` (the disk
    counts as full); None when there is room, or the disk cannot be seen. The one measure of
    a full disk: the store's, a task's folder's and a container engine's."""
    try:
        info = os.statvfs(path)
    except OSError:
        return None
    free = info.f_bavail * info.f_frsize
    return free if free < MIN_FREE_BYTES else None


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
        self._conn.execute("PRAGMA wal_autocheckpoint=0")  # the checkpointer's job
        self._conn.executescript(_IDS_TABLE)
        self._local = threading.local()
        self._next: dict[str, int] = {}
        self._ids_lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._waiting: list[_Write] = []
        self._queue_lock = threading.Lock()
        self._leading = False
        self._closed = False
        self._closing = threading.Event()
        self._checkpointer = threading.Thread(
            target=self._checkpoints, name="trainpool-sqlite-checkpoint", daemon=True
        )
        self._checkpointer.start()

    def _checkpoints(self) -> None:
        """Copy the write-ahead log into the database every :data:`CHECKPOINT_S` (PASSIVE:
        writers and readers go on meanwhile)."""
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            while not self._closing.wait(CHECKPOINT_S):
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error:
                    pass  # busy, or a full disk: the next one tries again
        finally:
            conn.close()

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run one query on a reading connection (it sees every committed write), borrowed
        for the query alone, and return its rows."""
        conn = self._borrow()
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            self._give_back(conn)

    def _borrow(self) -> sqlite3.Connection:
        """The reading connection used last (the warmest), or a new one when none is idle."""
        with self._readers_lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            if self._idle:
                return self._idle.pop()
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        conn.row_factory = sqlite3.Row
        return conn

    def _give_back(self, conn: sqlite3.Connection) -> None:
        """Keep ``conn`` for the next read, or close it: one more than :data:`READERS_KEPT`
        idle, or the database closed meanwhile."""
        with self._readers_lock:
            if not self._closed and len(self._idle) < READERS_KEPT:
                self._idle.append(conn)
                return
        conn.close()

    def executescript(self, script: str) -> None:
        """Run DDL (``CREATE TABLE IF NOT EXISTS ...``)."""
        with self._lock:
            self._conn.executescript(script)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run one statement in its own transaction (SQLite's implicit one: a single call
        while the lock is held) and return its rows; a full disk raises :class:`DiskFull`."""
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as err:
                if not is_disk_full(err):
                    raise
                raise DiskFull(
                    self.path.parent, f"the database could not be written ({err})"
                ) from err

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

    def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(conn)`` in a transaction of its own, committed together with the writes other
        threads are waiting to make (group commit); what it returns, or what it raised (its
        statements undone, the others' kept). A full disk raises :class:`DiskFull`.

        The first thread to write leads: it takes every write waiting, runs them in one
        transaction under the writers' lock, and wakes their threads; those that came
        meanwhile wait, and the first of them leads next. So under load the lock is handed
        over once a batch, not once a write: each handover needs the next thread to get a
        core and the GIL, which on a busy machine costs more than the write (REST's Creates
        waited for it 4 times as long as gRPC's: the benchmarks page). ``fn`` runs on the
        leader's thread, perhaps twice (:meth:`_commit`): it touches ``conn`` and its own
        values only."""
        if getattr(self._local, "writing", False):  # a write within a write: the same one
            return fn(self._conn)
        mine = _Write(fn)
        with self._queue_lock:
            self._waiting.append(mine)
            mine.leads = not self._leading
            self._leading = True
        if not mine.leads:
            mine.done.wait()
        if mine.leads:
            self._lead()
        return mine.outcome()

    def _lead(self) -> None:
        """Commit every write waiting as one batch, wake their threads, and hand the lead to
        the first that came meanwhile (or give it up)."""
        with self._queue_lock:
            batch, self._waiting = self._waiting, []
        try:
            self._commit(batch)
        finally:
            with self._queue_lock:
                following = self._waiting[0] if self._waiting else None
                if following is None:
                    self._leading = False
                else:
                    following.leads = True
            for write in batch:
                write.done.set()
            if following is not None:
                following.done.set()

    def _commit(self, batch: list[_Write]) -> None:
        """Run ``batch`` in one transaction. When one of its writes fails, the transaction
        is rolled back and each write runs again in a transaction of its own, so that the
        failure is that write's alone (a write touches ``conn`` only, so running it twice
        is harmless; savepoints would cost two statements a write, and each statement lets
        go of the GIL while the lock is held). A full disk fails them all."""
        with self._lock:
            self._local.writing = True
            try:
                if not self._run(batch) and len(batch) > 1:
                    for write in batch:
                        write.error = None
                        self._run([write])
            finally:
                self._local.writing = False

    def _run(self, batch: list[_Write]) -> bool:
        """Run ``batch`` in one transaction. True when it is settled: committed, every write
        having succeeded, or failed as a whole (a full disk, a failed BEGIN or COMMIT: each
        write has that error). False when one write failed: rolled back, for each write to
        run again alone."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            for write in batch:
                write.run(self._conn)
                if write.error is not None:
                    if is_disk_full(write.error):
                        raise write.error
                    self._conn.execute("ROLLBACK")
                    return False
            self._conn.execute("COMMIT")
            return True
        except BaseException as err:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            failed = err
            if is_disk_full(err) and not isinstance(err, DiskFull):
                failed = DiskFull(self.path.parent, f"the database could not be written ({err})")
            for write in batch:
                write.error, write.result = failed, None
            if not isinstance(err, Exception):
                raise
            return True

    def require_space(self) -> None:
        """Raise :class:`DiskFull` when the store's disk has less than :data:`MIN_FREE_BYTES`."""
        free = low_space(self.path.parent)
        if free is not None:
            raise DiskFull(self.path.parent, f"{free} bytes free")

    def new_id(self, sequence: str = "resource") -> str:
        """The next id of ``sequence`` as a string ("1000", "1001", ...); survives restarts."""
        value = self.take_id(sequence)
        with self.transaction() as conn:
            keep_id(conn, sequence, value)
        return value

    def take_id(self, sequence: str) -> str:
        """The next id of ``sequence``, from memory; store it with :func:`keep_id` in the
        transaction that stores what it names (an id whose record failed is not reused)."""
        with self._ids_lock:
            if sequence not in self._next:
                rows = self.read("SELECT next FROM ids WHERE name = ?", (sequence,))
                self._next[sequence] = FIRST_ID if not rows else int(rows[0]["next"])
            value = self._next[sequence]
            self._next[sequence] = value + 1
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
        self._closing.set()
        self._checkpointer.join(timeout=5)
        with self._lock:
            try:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass
            with self._readers_lock:
                self._closed = True
                idle, self._idle = self._idle, []
            for reader in idle:
                reader.close()
            self._conn.close()


class _Write:
    """One write waiting for :meth:`Database.write`: its function, and then its outcome."""

    __slots__ = ("fn", "done", "leads", "result", "error")

    def __init__(self, fn: Callable[[sqlite3.Connection], Any]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.leads = False
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self, conn: sqlite3.Connection) -> None:
        """Run in the open transaction; an error is kept, to be raised in the writer's thread."""
        try:
            self.result = self.fn(conn)
        except Exception as err:
            self.error = err

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


def keep_id(conn: sqlite3.Connection, sequence: str, value: str) -> None:
    """Within a transaction of ``conn``: id ``value`` of ``sequence`` is taken for good."""
    conn.execute(
        "INSERT INTO ids (name, next) VALUES (?, ?) "
        "ON CONFLICT(name) DO UPDATE SET next = max(next, excluded.next)",
        (sequence, int(value) + 1),
    )
