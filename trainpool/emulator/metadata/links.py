"""The links between Vertex ML Metadata resources, kept in two tables beside ``resources``:

- ``metadata_links``: a Context's members, each an Artifact or an Execution
  (``AddContextArtifactsAndExecutions``) or a child Context (``AddContextChildren``); a
  child's ``parent_contexts`` (output only) is kept on the child too, as Vertex answers it;
- ``metadata_events``: an Execution's INPUT and OUTPUT events (``AddExecutionEvents``).

As the API documents ``AddContextChildren`` (``google/cloud/aiplatform_v1/types/
metadata_service.py``, googleapis/python-aiplatform v1.165.1, commit
3219d51921dbc9b65734a793dbab9619d0a7547d): "If this call would create a cycle or cause any
Context to have more than 10 parents, the request will fail with an INVALID_ARGUMENT
error"; children already added are skipped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from google.cloud.aiplatform_v1.types import event as event_types

from trainpool.emulator.api.rpc import not_found
from trainpool.emulator.records.kinds import ARTIFACTS, CONTEXTS, EXECUTIONS, Kind
from trainpool.emulator.records.resources import Records
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS metadata_links (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  context TEXT NOT NULL, member TEXT NOT NULL, kind TEXT NOT NULL,
  UNIQUE (context, member)
);
CREATE INDEX IF NOT EXISTS metadata_links_by_member ON metadata_links (member);
CREATE TABLE IF NOT EXISTS metadata_events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  execution TEXT NOT NULL, artifact TEXT NOT NULL, event BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS metadata_events_by_execution ON metadata_events (execution);
CREATE INDEX IF NOT EXISTS metadata_events_by_artifact ON metadata_events (artifact);
"""
MAX_PARENTS = 10


def require(records: Records, kind: Kind, name: str) -> Any:
    """The ``kind`` resource ``name``; NOT_FOUND when there is none."""
    found = records.get(kind, name)
    if found is None:
        raise not_found(f"{kind.label} {name} not found.")
    return found


class MetadataLinks:
    """The links and events of one emulator's ML Metadata (held by its ``MetadataRecords``,
    whose lock it shares)."""

    def __init__(self, state: EmulatorState, lock: threading.RLock) -> None:
        self.state = state
        self.records = state.records
        self.db = state.db
        self.db.executescript(_SCHEMA)
        self._lock = lock

    def members(self, context: str, kind: str) -> list[str]:
        rows = self.db.read(
            "SELECT member FROM metadata_links WHERE context = ? AND kind = ? ORDER BY seq",
            (context, kind),
        )
        return [row["member"] for row in rows]

    def _contexts_of(self, member: str) -> list[str]:
        rows = self.db.read(
            "SELECT context FROM metadata_links WHERE member = ? ORDER BY seq", (member,)
        )
        return [row["context"] for row in rows]

    def forget(self, name: str) -> None:
        """Drop every link and event that names ``name`` (a resource being deleted)."""
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM metadata_links WHERE context = ? OR member = ?", (name, name))
            conn.execute(
                "DELETE FROM metadata_events WHERE execution = ? OR artifact = ?", (name, name)
            )

    def add_to_context(
        self, context: str, artifacts: Iterable[str], executions: Iterable[str]
    ) -> None:
        """AddContextArtifactsAndExecutions: each must exist (NOT_FOUND otherwise)."""
        require(self.records, CONTEXTS, context)
        rows = []
        for kind, names, what in (
            (ARTIFACTS, artifacts, "artifact"),
            (EXECUTIONS, executions, "execution"),
        ):
            for name in names:
                require(self.records, kind, name)
                rows.append((context, name, what))
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO metadata_links (context, member, kind) VALUES (?, ?, ?)",
                rows,
            )

    def add_children(self, context: str, children: Iterable[str]) -> None:
        """AddContextChildren: no cycle, at most :data:`MAX_PARENTS` parents a Context."""
        with self._lock:
            require(self.records, CONTEXTS, context)
            ancestors = self._ancestors(context)
            for child in children:
                found = require(self.records, CONTEXTS, child)
                if child == context or child in ancestors:
                    raise InputError.of(
                        "child_contexts",
                        f"{child} is {context} or one of its ancestors: the link would make a "
                        "cycle; accepted: Contexts that are not ancestors of the parent",
                    )
                if context in found.parent_contexts:
                    continue
                if len(found.parent_contexts) >= MAX_PARENTS:
                    raise InputError.of(
                        "child_contexts",
                        f"{child} has {MAX_PARENTS} parents already; accepted: at most "
                        f"{MAX_PARENTS} parent Contexts per Context",
                    )
                self.set_parents(child, lambda parents: [*parents, context])
                with self.db.transaction() as conn:
                    conn.execute(
                        "INSERT OR IGNORE INTO metadata_links (context, member, kind) "
                        "VALUES (?, ?, 'context')",
                        (context, child),
                    )

    def remove_children(self, context: str, children: Iterable[str]) -> None:
        with self._lock:
            require(self.records, CONTEXTS, context)
            for child in children:
                require(self.records, CONTEXTS, child)
                self.set_parents(child, lambda parents: [p for p in parents if p != context])
                with self.db.transaction() as conn:
                    conn.execute(
                        "DELETE FROM metadata_links WHERE context = ? AND member = ?",
                        (context, child),
                    )

    def set_parents(self, child: str, change: Callable[[list[str]], list[str]]) -> None:
        if self.records.get(CONTEXTS, child) is None:
            return

        def update(current: Any) -> None:
            parents = change(list(current.parent_contexts))
            del current.parent_contexts[:]
            current.parent_contexts.extend(parents)

        self.records.update(CONTEXTS, child, update, stamp=False)

    def _ancestors(self, context: str) -> set[str]:
        seen: set[str] = set()
        todo = [context]
        while todo:
            found = self.records.get(CONTEXTS, todo.pop())
            for parent in found.parent_contexts if found is not None else []:
                if parent not in seen:
                    seen.add(parent)
                    todo.append(parent)
        return seen

    def add_events(self, execution: str, events: Iterable[Any]) -> None:
        """AddExecutionEvents: each event's artifact must exist; its time is now."""
        require(self.records, EXECUTIONS, execution)
        rows = []
        for index, event in enumerate(events):
            if not event.artifact:
                raise InputError.of(
                    f"events[{index}].artifact", "is empty; accepted: an Artifact name"
                )
            require(self.records, ARTIFACTS, event.artifact)
            if event.type_ == event_types.Event.Type.TYPE_UNSPECIFIED:
                raise InputError.of(
                    f"events[{index}].type", "is TYPE_UNSPECIFIED; accepted: INPUT or OUTPUT"
                )
            stored = event_types.Event(
                artifact=event.artifact,
                execution=execution,
                type_=event.type_,
                labels=dict(event.labels),
                event_time=self.state.clock.now(),
            )
            rows.append((execution, event.artifact, event_types.Event.serialize(stored)))
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT INTO metadata_events (execution, artifact, event) VALUES (?, ?, ?)", rows
            )

    def events(self, column: str, names: Iterable[str]) -> list[Any]:
        wanted = list(dict.fromkeys(names))
        found: list[Any] = []
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = self.db.read(
                f"SELECT event FROM metadata_events WHERE {column} IN "
                f"({','.join('?' * len(chunk))}) ORDER BY seq",
                chunk,
            )
            found += [event_types.Event.deserialize(row["event"]) for row in rows]
        return found
