"""The records' writes under load: ``Database.write`` commits the writes that wait together
(group commit), and a write that fails fails alone; the reads' connections follow the reads
in flight, not the threads that ever read."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fixtures.processes import open_on

from trainpool.emulator.records.database import READERS_KEPT, Database, DiskFull

WRITERS = 6


@pytest.fixture
def db(tmp_path: Path) -> Any:
    opened = Database(tmp_path / "records.db")
    opened.executescript("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL);")
    yield opened
    opened.close()


def _insert(key: str, value: int = 0) -> Callable[[sqlite3.Connection], str]:
    def fn(conn: sqlite3.Connection) -> str:
        conn.execute("INSERT INTO t (k, v) VALUES (?, ?)", (key, value))
        return key

    return fn


def _batched(db: Database, fns: list[Callable[[sqlite3.Connection], Any]]) -> list[Any]:
    """Run ``fns`` on threads of their own while the writers' lock is held elsewhere, so that
    the first leads and waits for the lock while the others queue behind it; then let go.
    What each returned or raised, in order; and the COMMITs counted."""
    outcomes: list[Any] = [None] * len(fns)

    def call(i: int) -> None:
        try:
            outcomes[i] = db.write(fns[i])
        except BaseException as err:  # noqa: BLE001 - the outcome under test
            outcomes[i] = err

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(fns))]
    with db._lock:
        threads[0].start()
        _until(lambda: db._leading and not db._waiting)  # the leader took its batch of one
        for thread in threads[1:]:
            thread.start()
        _until(lambda: len(db._waiting) == len(fns) - 1)
    for thread in threads:
        thread.join(timeout=30)
    return outcomes


def _until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, "the writers never queued"
        time.sleep(0.001)


def _commits(db: Database) -> list[str]:
    seen: list[str] = []
    db._conn.set_trace_callback(lambda sql: seen.append(sql) if sql == "COMMIT" else None)
    return seen


def test_writes_that_wait_are_committed_together(db: Database) -> None:
    commits = _commits(db)
    outcomes = _batched(db, [_insert(f"k{i}", i) for i in range(WRITERS)])
    assert outcomes == [f"k{i}" for i in range(WRITERS)]
    assert len(commits) == 2  # the leader's own, then the other five in one
    rows = db.read("SELECT k, v FROM t ORDER BY v")
    assert [(r["k"], r["v"]) for r in rows] == [(f"k{i}", i) for i in range(WRITERS)]


def test_a_failing_write_fails_alone(db: Database) -> None:
    db.write(_insert("taken"))
    fns = [_insert(f"k{i}") for i in range(WRITERS)]
    fns[3] = _insert("taken")  # in the batch with four others
    outcomes = _batched(db, fns)
    assert isinstance(outcomes[3], sqlite3.IntegrityError)
    assert [o for i, o in enumerate(outcomes) if i != 3] == [
        f"k{i}" for i in range(WRITERS) if i != 3
    ]
    keys = {r["k"] for r in db.read("SELECT k FROM t")}
    assert keys == {"taken"} | {f"k{i}" for i in range(WRITERS) if i != 3}


def test_a_full_disk_fails_the_whole_batch_and_keeps_nothing_of_it(db: Database) -> None:
    def full(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t (k, v) VALUES ('full', 0)")
        raise sqlite3.OperationalError("database or disk is full")

    fns = [_insert(f"k{i}") for i in range(WRITERS)]
    fns[2] = full
    outcomes = _batched(db, fns)
    assert outcomes[0] == "k0"  # the leader's batch of one, before
    assert all(isinstance(o, DiskFull) for o in outcomes[1:]), outcomes
    assert "emulator's store" in str(outcomes[1])
    assert {r["k"] for r in db.read("SELECT k FROM t")} == {"k0"}
    assert db.write(_insert("after")) == "after"  # space back: writes go on


def test_a_write_within_a_write_joins_it(db: Database) -> None:
    def outer(conn: sqlite3.Connection) -> str:
        conn.execute("INSERT INTO t (k, v) VALUES ('outer', 1)")
        return db.write(_insert("inner", 2))

    assert db.write(outer) == "inner"
    assert {r["k"] for r in db.read("SELECT k FROM t")} == {"outer", "inner"}


def test_many_threads_lose_no_write(db: Database) -> None:
    """200 writes from 8 threads, some failing: every other one is stored, once."""
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        for i in range(25):
            key = "dup" if i == 7 else f"{n}-{i}"
            try:
                db.write(_insert(key))
            except sqlite3.IntegrityError as err:
                errors.append(err)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(errors) == 7  # "dup" stored once
    assert db.read("SELECT count(*) AS n FROM t")[0]["n"] == 8 * 24 + 1
    assert not db._leading and not db._waiting


def test_threads_that_read_and_end_leave_no_connection_open(db: Database) -> None:
    """200 threads each reading once, as the REST door's threads (one a connection) do: the
    connections left open on the file are the kept idle ones, the writer's and the
    checkpointer's, not one for each thread that ever read."""
    db.write(_insert("k", 7))
    got: list[int] = []

    def reader() -> None:
        got.append(db.read("SELECT v FROM t WHERE k = 'k'")[0]["v"])

    for _ in range(20):
        threads = [threading.Thread(target=reader) for _ in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    assert got == [7] * 200
    assert open_on(db.path) <= READERS_KEPT + 2


def test_a_read_in_flight_when_the_database_closes_closes_its_connection(db: Database) -> None:
    """Closing waits for no reader; the connection of a read still running is closed when
    that read ends, and a read after the close is refused."""
    db.read("SELECT 1")  # one idle connection, to hold the next read at a point of our own
    started, go = threading.Event(), threading.Event()
    db._idle[0].create_function("held", 0, lambda: bool(started.set() or go.wait(30)))
    rows: list[Any] = []
    thread = threading.Thread(target=lambda: rows.extend(db.read("SELECT held() AS h")))
    thread.start()
    assert started.wait(30)
    db.close()
    go.set()
    thread.join(timeout=30)
    assert [row["h"] for row in rows] == [1]
    assert open_on(db.path) == 0
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        db.read("SELECT 1")
