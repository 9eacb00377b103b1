"""Long-running operations: every one the emulator answers is kept, so clients can poll it.

Vertex answers Delete*, UploadModel and others with an ``Operation``; clients then poll it
(``GET /v1/{name=projects/*/locations/*/.../operations/*}``, ``google.longrunning.Operations``
``GetOperation``; gcloud always polls at least once, the SDK's operation futures do when
not done). The emulator finishes most of its operations at once (:meth:`Operations.done`);
one that finishes later (a Cloud Build build) is saved not done, with a ``refresh`` that
brings it up to date when it is read. Rows live in the root's SQLite file (table
``operations``), so a restarted emulator still answers them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2
from google.protobuf.message import Message

from trainpool.emulator.records.database import Database

_SCHEMA = """
CREATE TABLE IF NOT EXISTS operations (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  parent TEXT NOT NULL,
  proto BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS operations_by_parent ON operations (parent, seq);
"""
Refresh = Callable[[operations_pb2.Operation], operations_pb2.Operation]


def pack(message: Any) -> any_pb2.Any:
    """``message`` (protobuf or proto-plus) in an ``Any``."""
    raw = message if isinstance(message, Message) else type(message).pb(message)
    packed = any_pb2.Any()
    packed.Pack(raw)
    return packed


def done(name: str, response: Any = None) -> operations_pb2.Operation:
    """A finished ``Operation`` named ``name`` whose response is ``response`` (a protobuf or
    proto-plus message; ``Empty`` when None). Not kept: see :meth:`Operations.done`."""
    return operations_pb2.Operation(
        name=name, done=True, response=pack(response if response is not None else empty_pb2.Empty())
    )


def parent_of(name: str) -> str:
    """What ``ListOperations`` lists ``name`` under: the name before ``/operations/``."""
    head, sep, _ = name.rpartition("/operations/")
    return head if sep else ""


class Operations:
    """The operations of one emulator, kept in its database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        db.executescript(_SCHEMA)
        self._refresh: list[tuple[Callable[[str], bool], Refresh]] = []
        self._lock = threading.Lock()

    def save(self, operation: operations_pb2.Operation) -> operations_pb2.Operation:
        """Keep ``operation`` (replacing one of the same name); returns it."""
        self.db.execute(
            "INSERT INTO operations (name, parent, proto) VALUES (?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET proto = excluded.proto",
            (operation.name, parent_of(operation.name), operation.SerializeToString()),
        )
        return operation

    def done(self, name: str, response: Any = None) -> operations_pb2.Operation:
        """A finished operation named ``name`` (response ``response``, Empty when None), kept."""
        return self.save(done(name, response))

    def refresh_with(self, matches: Callable[[str], bool], refresh: Refresh) -> None:
        """Bring an operation whose name ``matches`` up to date with ``refresh`` when read."""
        with self._lock:
            self._refresh.append((matches, refresh))

    def _current(self, operation: operations_pb2.Operation) -> operations_pb2.Operation:
        if operation.done:
            return operation
        for matches, refresh in list(self._refresh):
            if matches(operation.name):
                updated = refresh(operation)
                if updated.SerializeToString() != operation.SerializeToString():
                    self.save(updated)
                return updated
        return operation

    def get(self, name: str) -> operations_pb2.Operation | None:
        rows = self.db.read("SELECT proto FROM operations WHERE name = ?", (name,))
        if not rows:
            return None
        return self._current(operations_pb2.Operation.FromString(rows[0]["proto"]))

    def delete(self, name: str) -> bool:
        return bool(self.db.execute("DELETE FROM operations WHERE name = ? RETURNING seq", (name,)))

    def page(
        self, parent: str, page_size: int, after: int = 0
    ) -> tuple[list[operations_pb2.Operation], str]:
        """Operations under ``parent`` in creation order, after sequence number ``after``
        (the page token), and the next page's token."""
        rows = self.db.read(
            "SELECT seq, proto FROM operations WHERE parent = ? AND seq > ? ORDER BY seq LIMIT ?",
            (parent, after, page_size + 1),
        )
        found = [self._current(operations_pb2.Operation.FromString(r["proto"])) for r in rows]
        if len(rows) > page_size:
            return found[:page_size], str(rows[page_size - 1]["seq"])
        return found, ""
