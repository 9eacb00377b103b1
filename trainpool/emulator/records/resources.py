"""Every resource the emulator keeps, in one table: insert, get, update, delete, a page.

A record is the whole proto (``CustomJob.serialize``), so every field a client sent
comes back unchanged. Beside it, indexed columns hold what a List filters and orders by:
``kind`` (the collection, ``customJobs``), ``parent``, ``seq`` (creation order, the page
token), ``state`` and ``display_name``; labels are rows of ``resource_labels``, and the
fields a kind indexes (a PipelineJob's ``schedule_name``) rows of ``resource_fields``. A List
answers its filter and its page from those indexes in SQL and deserializes only the page
it returns, so its cost does not grow with the number of stored resources.

A :class:`~trainpool.emulator.records.kinds.Kind` (:mod:`trainpool.emulator.records.kinds`)
says how a collection's resources are stored: its proto-plus message, the enum its ``state``
filter names (``state=JOB_STATE_RUNNING``), and the string fields a List may filter on
(``schedule_name=...``).

Timestamps (``update_time``) come from the emulator's clock (:mod:`trainpool.emulator.clock`).

When the disk is full (:class:`trainpool.emulator.records.database.DiskFull`), an insert
fails (nothing is created); an update is kept in memory, served by ``get`` and ``page``
until a later write can store it, and raises ``DiskFull`` so the caller knows: a job that
fails because its disk is full is shown FAILED at once, even when not one more byte can be
written.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable
from typing import Any

from trainpool.emulator.clock import Clock
from trainpool.emulator.records import paging
from trainpool.emulator.records.database import Database, DiskFull
from trainpool.emulator.records.kinds import Kind

_SCHEMA = """
CREATE TABLE IF NOT EXISTS resources (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  name TEXT NOT NULL UNIQUE,
  parent TEXT NOT NULL,
  state INTEGER NOT NULL DEFAULT 0,
  display_name TEXT NOT NULL DEFAULT '',
  proto BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS resources_by_parent ON resources (kind, parent, seq);
CREATE INDEX IF NOT EXISTS resources_by_state ON resources (kind, parent, state, seq);
CREATE INDEX IF NOT EXISTS resources_by_display_name ON resources (kind, parent, display_name, seq);
CREATE TABLE IF NOT EXISTS resource_labels (
  name TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (name, key)
);
CREATE INDEX IF NOT EXISTS resource_labels_by_value ON resource_labels (key, value, name);
CREATE TABLE IF NOT EXISTS resource_fields (
  name TEXT NOT NULL, field TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (name, field)
);
CREATE INDEX IF NOT EXISTS resource_fields_by_value ON resource_fields (field, value, name);
"""


def _insert_rows(conn: sqlite3.Connection, table: str, name: str, pairs: dict[str, str]) -> None:
    """``name``'s ``pairs`` as rows of ``table`` (its columns named); no statement for none:
    each statement lets go of the GIL while the writers' lock is held."""
    if pairs:
        conn.executemany(
            f"INSERT INTO {table} VALUES (?, ?, ?)",
            [(name, key, value) for key, value in pairs.items()],
        )


class AlreadyExists(KeyError):
    """A resource of that name is stored already."""


def _labels(resource: Any) -> dict[str, str]:
    labels = getattr(resource, "labels", None)
    return dict(labels.items()) if labels is not None else {}


class Records:
    """The resources of one emulator; updates are read-modify-write under one lock."""

    def __init__(self, db: Database, clock: Clock | None = None) -> None:
        self.db = db
        self.clock = clock or Clock()
        db.executescript(_SCHEMA)
        self._lock = threading.RLock()
        self._unsaved: dict[str, tuple[Kind, Any]] = {}

    def insert(
        self,
        kind: Kind,
        parent: str,
        resource: Any,
        also: Callable[[sqlite3.Connection], None] | None = None,
    ) -> Any:
        """Store ``resource`` (its ``name`` set) under ``parent``; :class:`AlreadyExists` when
        its name is taken. ``also(conn)`` runs in the same transaction."""
        row = (
            kind.collection,
            resource.name,
            parent,
            kind.state_of(resource),
            getattr(resource, "display_name", ""),
            kind.message.serialize(resource),
        )  # made before the writers' lock is taken: it is held for the statements only
        labels, fields = _labels(resource), kind.fields_of(resource)

        def store(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO resources (kind, name, parent, state, display_name, proto) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                row,
            )  # a new name has no labels or fields stored: delete() takes them with it
            _insert_rows(conn, "resource_labels (name, key, value)", resource.name, labels)
            _insert_rows(conn, "resource_fields (name, field, value)", resource.name, fields)
            if also is not None:
                also(conn)

        try:
            self.db.write(store)
        except sqlite3.IntegrityError:
            raise AlreadyExists(resource.name) from None
        return resource

    @staticmethod
    def _set_labels(conn: sqlite3.Connection, name: str, labels: dict[str, str]) -> None:
        Records.set_labels(conn, name, labels)

    @staticmethod
    def set_labels(conn: sqlite3.Connection, name: str, labels: dict[str, str]) -> None:
        """``name``'s labels, in the caller's transaction."""
        conn.execute("DELETE FROM resource_labels WHERE name = ?", (name,))
        _insert_rows(conn, "resource_labels (name, key, value)", name, labels)

    @staticmethod
    def set_fields(conn: sqlite3.Connection, name: str, fields: dict[str, str]) -> None:
        conn.execute("DELETE FROM resource_fields WHERE name = ?", (name,))
        _insert_rows(conn, "resource_fields (name, field, value)", name, fields)

    def get(self, kind: Kind, name: str) -> Any | None:
        unsaved = self._unsaved.get(name)
        if unsaved is not None and unsaved[0] == kind:
            return kind.message.deserialize(kind.message.serialize(unsaved[1]))
        rows = self.db.read(
            "SELECT proto FROM resources WHERE name = ? AND kind = ?", (name, kind.collection)
        )
        return kind.message.deserialize(rows[0]["proto"]) if rows else None

    def require(self, kind: Kind, name: str) -> Any:
        """The stored resource; KeyError when there is none."""
        found = self.get(kind, name)
        if found is None:
            raise KeyError(name)
        return found

    def update(
        self,
        kind: Kind,
        name: str,
        change: Callable[[Any], None],
        also: Callable[[sqlite3.Connection], None] | None = None,
        *,
        stamp: bool = True,
    ) -> Any:
        """Apply ``change`` to the stored resource, stamp ``update_time`` (unless ``stamp`` is
        False: a change of output fields only), store and return it (on a full disk it is
        kept in memory, and ``DiskFull`` raised). ``also(conn)`` runs in the same transaction
        (a statement on another table that goes with it)."""
        with self._lock:
            self._flush()
            resource = self.require(kind, name)
            before = _labels(resource), kind.fields_of(resource)
            change(resource)
            if stamp and kind.stamps_updates():
                resource.update_time = self.clock.now()
            try:
                self._write(kind, name, resource, before, also)
            except DiskFull:
                self._unsaved[name] = (kind, resource)
                raise
            return resource

    def _write(
        self,
        kind: Kind,
        name: str,
        resource: Any,
        before: tuple[dict[str, str], dict[str, str]] | None = None,
        also: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        """Store ``resource``; its labels and indexed fields too unless they equal
        ``before`` (None: unknown, written)."""
        row = (
            kind.state_of(resource),
            getattr(resource, "display_name", ""),
            kind.message.serialize(resource),
            name,
        )  # made before the writers' lock is taken: it is held for the statements only
        labels, fields = _labels(resource), kind.fields_of(resource)

        def store(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE resources SET state = ?, display_name = ?, proto = ? WHERE name = ?", row
            )
            if before is None or labels != before[0]:
                self._set_labels(conn, name, labels)
            if before is None or fields != before[1]:
                self.set_fields(conn, name, fields)
            if also is not None:
                also(conn)

        self.db.write(store)
        self._unsaved.pop(name, None)

    def _flush(self) -> None:
        """Store the updates a full disk held back, while it lets them."""
        for name, (kind, resource) in list(self._unsaved.items()):
            try:
                self._write(kind, name, resource)
            except DiskFull:
                return

    def unsaved(self) -> int:
        """How many updates wait in memory for disk space."""
        return len(self._unsaved)

    def delete(self, kind: Kind, name: str) -> bool:
        """Remove the resource; False when there was none."""
        with self.db.transaction() as conn:
            gone = conn.execute(
                "DELETE FROM resources WHERE name = ? AND kind = ?", (name, kind.collection)
            ).rowcount
            conn.execute("DELETE FROM resource_labels WHERE name = ?", (name,))
            conn.execute("DELETE FROM resource_fields WHERE name = ?", (name,))
        return bool(gone)

    def page(
        self,
        kind: Kind,
        parent: str,
        *,
        filter: str = "",
        page_size: int = 0,
        page_token: str = "",
        order_by: str = "",
    ) -> tuple[list[Any], str]:
        """One page of ``kind`` under ``parent`` that match ``filter``, in ``order_by``'s
        order (else the kind's default order, else creation order), and the next page token
        ("" on the last page). Bad filters, orders and tokens raise
        :class:`trainpool.errors.InputError`."""
        where, params = self._where(kind, filter)
        size = paging.page_size(page_size)
        order = order_by.strip() or kind.default_order
        after = paging.page_after(page_token)
        if order:
            orderable = ("display_name", *kind.times)
            terms = paging.order_sql(paging.parse_order(order, orderable), "resources")
            rows = self.db.read(
                f"SELECT seq, proto FROM resources WHERE kind = ? AND parent = ?{where} "
                f"ORDER BY {terms} LIMIT ? OFFSET ?",
                [kind.collection, parent, *params, size + 1, after],
            )
            token = str(after + size) if len(rows) > size else ""
        else:
            rows = self.db.read(
                "SELECT seq, proto FROM resources WHERE kind = ? AND parent = ? AND seq > ?"
                f"{where} ORDER BY seq LIMIT ?",
                [kind.collection, parent, after, *params, size + 1],
            )
            token = str(rows[size - 1]["seq"]) if len(rows) > size else ""
        found = []
        for row in rows[:size]:
            resource = kind.message.deserialize(row["proto"])
            unsaved = self._unsaved.get(resource.name)
            found.append(resource if unsaved is None else self.get(kind, resource.name))
        return found, token

    def _where(self, kind: Kind, filter: str) -> tuple[str, list[Any]]:
        conditions = paging.parse_filter(filter, kind.filterable(), kind.times)
        return paging.to_sql(
            conditions, "resources", "resource_labels", kind.state_value, "resource_fields"
        )

    def count(
        self,
        kind: Kind,
        parent: str | None,
        *,
        filter: str = "",
        not_states: Iterable[int] = (),
    ) -> int:
        """How many of ``kind`` under ``parent`` (None: any) match ``filter`` with a state
        not in ``not_states`` (a schedule's active runs), counted in SQL."""
        where, params = self._where(kind, filter)
        if parent is not None:
            where += " AND resources.parent = ?"
            params.append(parent)
        values = [int(v) for v in not_states]
        if values:
            where += f" AND resources.state NOT IN ({','.join('?' * len(values))})"
        rows = self.db.read(
            f"SELECT COUNT(*) AS n FROM resources WHERE kind = ?{where}",
            [kind.collection, *params, *values],
        )
        return int(rows[0]["n"])

    def names(
        self, kind: Kind, *, states: Iterable[int] | None = None, not_states: Iterable[int] = ()
    ) -> list[str]:
        """Names of ``kind`` (in creation order) whose state is in ``states`` (None: any) and
        not in ``not_states``; an update a full disk holds in memory counts."""
        rows = self.db.read(
            "SELECT name, state FROM resources WHERE kind = ? ORDER BY seq", [kind.collection]
        )
        wanted = None if states is None else {int(v) for v in states}
        unwanted = {int(v) for v in not_states}
        found = []
        for row in rows:
            unsaved = self._unsaved.get(row["name"])
            state = kind.state_of(unsaved[1]) if unsaved is not None else row["state"]
            if (wanted is None or state in wanted) and state not in unwanted:
                found.append(row["name"])
        return found
