"""Vertex ML Metadata kept in the emulator's SQLite file: stores, contexts, artifacts,
executions, schemas, and the links between them.

Resources are rows of the one ``resources`` table (:mod:`trainpool.emulator.records`), under
their MetadataStore (``projects/P/locations/L/metadataStores/S``). Beside them:

- ``metadata_links``: a Context's members, each an Artifact or an Execution
  (``AddContextArtifactsAndExecutions``) or a child Context (``AddContextChildren``); a
  child's ``parent_contexts`` (output only) is kept on the child too, as Vertex answers it;
- ``metadata_events``: an Execution's INPUT and OUTPUT events (``AddExecutionEvents``).

Rules, as the API documents them (``google/cloud/aiplatform_v1/types/metadata_service.py``
and ``context.py``, googleapis/python-aiplatform v1.165.1, commit
3219d51921dbc9b65734a793dbab9619d0a7547d):

- an id given by the client "Must be 4-128 characters in length. Valid characters are
  /[a-z][0-9]-/. Must be unique across all ... in the parent MetadataStore. (Otherwise the
  request will fail with ALREADY_EXISTS ...)"; one not given is generated (here: digits,
  as Vertex's are);
- "If this call would create a cycle or cause any Context to have more than 10 parents,
  the request will fail with an INVALID_ARGUMENT error" (``AddContextChildren``); children
  already added are skipped;
- an update whose ``etag`` is set and is not the stored one is ABORTED, "Specified Context
  `etag`: `X` does not match server `etag`: `Y`" (what Vertex answered in
  googleapis/python-aiplatform#1674); every write gives a new etag;
- Purge* deletes what a filter matches, at most :data:`MAX_PURGE` at a time, and only
  counts them (``purge_count``, ``purge_sample``) unless ``force``.

A resource in a MetadataStore that does not exist is NOT_FOUND, naming the store.
"""

from __future__ import annotations

import operator
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import grpc
from google.cloud.aiplatform_v1.types import event as event_types
from google.cloud.aiplatform_v1.types import lineage_subgraph as lineage_types
from google.protobuf import field_mask_pb2, json_format

from trainpool.emulator.api.rpc import RpcError, already_exists, not_found
from trainpool.emulator.metadata import filters
from trainpool.emulator.records import paging
from trainpool.emulator.records.kinds import (
    ARTIFACTS,
    CONTEXTS,
    EXECUTIONS,
    METADATA_SCHEMAS,
    METADATA_STORES,
)
from trainpool.emulator.records.resources import AlreadyExists, Kind
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError, brief

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
ID = re.compile(r"[a-z0-9-]{4,128}")
ID_RULE = "4-128 characters of lowercase letters, digits and '-'"
MAX_PARENTS = 10
MAX_PURGE = 10_000
"""How many resources one Purge deletes (``PurgeArtifactsResponse.purge_sample``: "The
maximum number of samples is 100"; the emulator bounds the purge itself too)."""
MAX_SAMPLE = 100
MAX_HOPS = 100
NODES = {"artifacts": ARTIFACTS, "executions": EXECUTIONS, "contexts": CONTEXTS}
_UPDATABLE = {
    "contexts": (
        "display_name",
        "labels",
        "schema_title",
        "schema_version",
        "metadata",
        "description",
    ),
    "artifacts": (
        "display_name",
        "uri",
        "labels",
        "state",
        "schema_title",
        "schema_version",
        "metadata",
        "description",
    ),
    "executions": (
        "display_name",
        "state",
        "labels",
        "schema_title",
        "schema_version",
        "metadata",
        "description",
    ),
}


def store_of(name: str) -> str:
    """``projects/P/locations/L/metadataStores/S`` of any name under a MetadataStore."""
    head, marker, rest = name.partition("/metadataStores/")
    return f"{head}{marker}{rest.split('/', 1)[0]}" if marker else ""


def metadata_dict(resource: Any) -> dict[str, Any]:
    """The ``metadata`` Struct of a Context, Artifact or Execution as a dict."""
    raw = type(resource).pb(resource)
    return json_format.MessageToDict(raw.metadata) if raw.HasField("metadata") else {}


@dataclass
class Page:
    items: list[Any]
    next_token: str


class MetadataRecords:
    """The ML Metadata of one emulator (one per server: :func:`metadata_of`)."""

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.records = state.records
        self.db = state.db
        self.db.executescript(_SCHEMA)
        self._lock = threading.RLock()
        self._last_etag = 0

    # -- stores ---------------------------------------------------------------------------

    def create_store(self, parent: str, store_id: str, store: Any) -> Any:
        store_id = store_id or self.state.new_id("metadata")
        if store_id != "default" and not ID.fullmatch(store_id):
            raise InputError.of(
                "metadata_store_id", f"{brief(store_id)}; accepted: {ID_RULE}, or default"
            )
        store.name = f"{parent}/metadataStores/{store_id}"
        store.create_time = store.update_time = self.state.clock.now()
        try:
            return self.records.insert(METADATA_STORES, parent, store)
        except AlreadyExists:
            raise already_exists(f"MetadataStore {store.name} already exists.") from None

    def ensure_store(self, name: str) -> Any:
        """The store ``name``, made when missing (as Vertex Pipelines makes ``default``)."""
        found = self.records.get(METADATA_STORES, name)
        if found is not None:
            return found
        parent, _, store_id = name.rpartition("/metadataStores/")
        try:
            return self.create_store(parent, store_id, METADATA_STORES.message())
        except RpcError:
            return self.records.require(METADATA_STORES, name)

    def require_store(self, name: str) -> Any:
        found = self.records.get(METADATA_STORES, name)
        if found is None:
            raise not_found(
                f"MetadataStore {name} not found. Create it first (CreateMetadataStore; "
                "the SDK makes `default` when it starts an experiment)."
            )
        return found

    def delete_store(self, name: str) -> None:
        self.require_store(name)
        for kind in (ARTIFACTS, EXECUTIONS, CONTEXTS, METADATA_SCHEMAS):
            for resource in self._all(kind, name):
                self._remove(kind, resource.name)
        self.records.delete(METADATA_STORES, name)

    # -- artifacts, executions, contexts, schemas -----------------------------------------

    def create(
        self,
        kind: Kind,
        parent: str,
        resource_id: str,
        resource: Any,
        field: str,
        *,
        trusted: bool = False,
    ) -> Any:
        """Store ``resource`` (a Context, Artifact, Execution or MetadataSchema) in store
        ``parent`` with id ``resource_id`` (generated when empty; ``trusted``: the
        emulator's own, such as a PipelineJob's id, not checked)."""
        self.require_store(parent)
        if resource_id and not trusted and not ID.fullmatch(resource_id):
            raise InputError.of(field, f"{brief(resource_id)}; accepted: {ID_RULE}")
        resource_id = resource_id or self.state.new_id("metadata")
        resource.name = f"{parent}/{kind.collection}/{resource_id}"
        now = self.state.clock.now()
        resource.create_time = now
        if "update_time" in kind.message.meta.fields:
            resource.update_time = now
        if "etag" in kind.message.meta.fields:
            resource.etag = self._etag()
        if kind is CONTEXTS:
            del resource.parent_contexts[:]
        try:
            return self.records.insert(kind, parent, resource)
        except AlreadyExists:
            raise already_exists(
                f"{kind.label} {resource.name} already exists in the MetadataStore."
            ) from None

    def require(self, kind: Kind, name: str) -> Any:
        found = self.records.get(kind, name)
        if found is None:
            raise not_found(f"{kind.label} {name} not found.")
        return found

    def update(
        self, kind: Kind, resource: Any, mask: field_mask_pb2.FieldMask | None, allow_missing: bool
    ) -> Any:
        """UpdateArtifact/Context/Execution: the fields of ``mask`` (every updatable field
        when empty) taken from ``resource``; ``allow_missing`` creates a missing one."""
        paths = list(mask.paths) if mask is not None else []
        allowed = _UPDATABLE[kind.collection]
        unknown = [p for p in paths if p not in allowed]
        if unknown:
            raise InputError.of(
                "update_mask",
                f"{brief(', '.join(unknown), quoted=False)} cannot be updated; accepted: "
                f"{', '.join(allowed)}",
            )
        with self._lock:
            stored = self.records.get(kind, resource.name)
            if stored is None:
                if not allow_missing:
                    raise not_found(f"{kind.label} {resource.name} not found.")
                parent, _, resource_id = resource.name.rpartition(f"/{kind.collection}/")
                return self.create(kind, parent, resource_id, resource, "name")
            if resource.etag and resource.etag != stored.etag:
                raise RpcError(
                    grpc.StatusCode.ABORTED,
                    f"Specified {kind.label} `etag`: `{resource.etag}` does not match server "
                    f"`etag`: `{stored.etag}`",
                )
            fields = paths or allowed
            new_etag = self._etag()

            def change(current: Any) -> None:
                for path in fields:
                    if path == "metadata":  # a Struct: copied whole, or cleared when unset
                        raw, given = kind.message.pb(current), kind.message.pb(resource)
                        raw.ClearField("metadata")
                        if given.HasField("metadata"):
                            raw.metadata.CopyFrom(given.metadata)
                    else:
                        setattr(current, path, getattr(resource, path))
                current.etag = new_etag

            return self.records.update(kind, resource.name, change)

    def delete(self, kind: Kind, name: str, etag: str = "") -> None:
        with self._lock:
            found = self.require(kind, name)
            if etag and etag != getattr(found, "etag", ""):
                raise RpcError(
                    grpc.StatusCode.ABORTED,
                    f"Specified {kind.label} `etag`: `{etag}` does not match server `etag`: "
                    f"`{found.etag}`",
                )
            self._remove(kind, name)

    def _remove(self, kind: Kind, name: str) -> None:
        if kind is CONTEXTS:
            for child in self._members(name, "context"):
                self._set_parents(child, lambda parents: [p for p in parents if p != name])
        self.records.delete(kind, name)
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM metadata_links WHERE context = ? OR member = ?", (name, name))
            conn.execute(
                "DELETE FROM metadata_events WHERE execution = ? OR artifact = ?", (name, name)
            )

    def purge(self, kind: Kind, parent: str, filter: str, force: bool) -> tuple[int, list[str]]:
        """Purge*: how many match ``filter`` (and a sample); deleted when ``force``."""
        if not filter.strip():
            raise InputError.of("filter", "is empty; accepted: a filter naming what to purge")
        self.require_store(parent)
        matched = [r.name for r in self._matching(kind, parent, filter)][:MAX_PURGE]
        if force:
            for name in matched:
                self._remove(kind, name)
        return len(matched), matched[:MAX_SAMPLE]

    def page(
        self,
        kind: Kind,
        parent: str,
        *,
        filter: str = "",
        page_size: int = 0,
        page_token: str = "",
        order_by: str = "",
    ) -> Page:
        """A page of ``kind`` in store ``parent`` that match ``filter``, in creation order
        (or ``order_by``); the token is the offset of the next page."""
        self.require_store(parent)
        size = paging.page_size(page_size)
        start = paging.page_after(page_token)
        found = self._matching(kind, parent, filter)
        if order_by:
            found = _ordered(found, order_by)
        page = found[start : start + size]
        token = str(start + size) if len(found) > start + size else ""
        return Page(page, token)

    def _all(self, kind: Kind, parent: str) -> list[Any]:
        rows = self.db.read(
            "SELECT proto FROM resources WHERE kind = ? AND parent = ? ORDER BY seq",
            (kind.collection, parent),
        )
        return [kind.message.deserialize(row["proto"]) for row in rows]

    def _matching(self, kind: Kind, parent: str, filter: str) -> list[Any]:
        parsed = filters.parse(filter, self.subject(kind))
        contexts = [argument for name, argument in parsed.required if name == "in_context"]
        if contexts:  # only a context's members can match: read those alone
            found = self.db.read(
                "SELECT r.proto FROM metadata_links l JOIN resources r ON r.name = l.member "
                "WHERE l.context = ? AND l.kind = ? AND r.kind = ? AND r.parent = ? "
                "ORDER BY r.seq",
                (contexts[0], kind.collection[:-1], kind.collection, parent),
            )
            rows = [kind.message.deserialize(row["proto"]) for row in found]
        else:
            rows = self._all(kind, parent)
        return [r for r in rows if parsed(r)]

    def subject(self, kind: Kind) -> filters.Subject:
        """How a filter reads ``kind`` (its documented fields, metadata, context functions)."""
        fields = {
            "name",
            "display_name",
            "schema_title",
            "schema_version",
            "create_time",
            "update_time",
        }
        if kind is not CONTEXTS:
            fields.add("state")
        if kind is ARTIFACTS:
            fields.add("uri")
        functions: dict[str, Callable[[str], filters.Predicate]] = {}
        has: dict[str, Callable[[str], filters.Predicate]] = {}
        if kind is CONTEXTS:
            has["parent_contexts"] = lambda name: lambda r: name in r.parent_contexts
            has["child_contexts"] = self._has_child
        else:
            functions["in_context"] = self._in_context(kind)
        return filters.Subject(frozenset(fields), _field, functions, has, metadata=metadata_dict)

    def _in_context(self, kind: Kind) -> Callable[[str], filters.Predicate]:
        def function(context: str) -> filters.Predicate:
            members = set(self._members(context, kind.collection[:-1]))
            return lambda resource: resource.name in members

        return function

    def _has_child(self, child: str) -> filters.Predicate:
        found = self.records.get(CONTEXTS, child)
        parents = set(found.parent_contexts) if found is not None else set()
        return lambda resource: resource.name in parents

    # -- links ----------------------------------------------------------------------------

    def _members(self, context: str, kind: str) -> list[str]:
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

    def add_to_context(
        self, context: str, artifacts: Iterable[str], executions: Iterable[str]
    ) -> None:
        """AddContextArtifactsAndExecutions: each must exist (NOT_FOUND otherwise)."""
        self.require(CONTEXTS, context)
        rows = []
        for kind, names, what in (
            (ARTIFACTS, artifacts, "artifact"),
            (EXECUTIONS, executions, "execution"),
        ):
            for name in names:
                self.require(kind, name)
                rows.append((context, name, what))
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO metadata_links (context, member, kind) VALUES (?, ?, ?)",
                rows,
            )

    def add_children(self, context: str, children: Iterable[str]) -> None:
        """AddContextChildren: no cycle, at most :data:`MAX_PARENTS` parents a Context."""
        with self._lock:
            self.require(CONTEXTS, context)
            ancestors = self._ancestors(context)
            for child in children:
                found = self.require(CONTEXTS, child)
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
                self._set_parents(child, lambda parents: [*parents, context])
                with self.db.transaction() as conn:
                    conn.execute(
                        "INSERT OR IGNORE INTO metadata_links (context, member, kind) "
                        "VALUES (?, ?, 'context')",
                        (context, child),
                    )

    def remove_children(self, context: str, children: Iterable[str]) -> None:
        with self._lock:
            self.require(CONTEXTS, context)
            for child in children:
                self.require(CONTEXTS, child)
                self._set_parents(child, lambda parents: [p for p in parents if p != context])
                with self.db.transaction() as conn:
                    conn.execute(
                        "DELETE FROM metadata_links WHERE context = ? AND member = ?",
                        (context, child),
                    )

    def _set_parents(self, child: str, change: Callable[[list[str]], list[str]]) -> None:
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
        self.require(EXECUTIONS, execution)
        rows = []
        for index, event in enumerate(events):
            if not event.artifact:
                raise InputError.of(
                    f"events[{index}].artifact", "is empty; accepted: an Artifact name"
                )
            self.require(ARTIFACTS, event.artifact)
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

    def _events(self, column: str, names: Iterable[str]) -> list[Any]:
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

    # -- lineage --------------------------------------------------------------------------

    def inputs_and_outputs(self, execution: str) -> Any:
        """QueryExecutionInputsAndOutputs: the execution, its artifacts and their events."""
        found = self.require(EXECUTIONS, execution)
        events = self._events("execution", [execution])
        return self._subgraph([e.artifact for e in events], [found.name], events)

    def context_subgraph(self, context: str) -> Any:
        """QueryContextLineageSubgraph: the Context's Artifacts and Executions and the
        events between them."""
        self.require(CONTEXTS, context)
        artifacts = self._members(context, "artifact")
        executions = self._members(context, "execution")
        events = [e for e in self._events("execution", executions) if e.artifact in set(artifacts)]
        return self._subgraph(artifacts, executions, events)

    def artifact_subgraph(self, artifact: str, max_hops: int, filter: str) -> Any:
        """QueryArtifactLineageSubgraph: what is reachable from ``artifact`` through events
        within ``max_hops`` (-1: no bound) hops, Artifacts limited to ``filter``."""
        self.require(ARTIFACTS, artifact)
        keep = filters.parse(filter, self.subject(ARTIFACTS))
        hops = MAX_HOPS if max_hops < 0 else min(max_hops, MAX_HOPS)
        artifacts: set[str] = {artifact}
        executions: set[str] = set()
        events: dict[tuple[str, str, int], Any] = {}
        frontier = {artifact}
        for _ in range(hops if hops else 0):
            found = self._events("artifact", frontier)
            next_executions = {e.execution for e in found} - executions
            executions |= next_executions
            linked = self._events("execution", next_executions)
            for event in [*found, *linked]:
                events[(event.execution, event.artifact, int(event.type_))] = event
            frontier = {e.artifact for e in linked} - artifacts
            artifacts |= frontier
            if not frontier:
                break
        kept = [
            a for a in artifacts if (r := self.records.get(ARTIFACTS, a)) is not None and keep(r)
        ]
        chosen = set(kept)
        return self._subgraph(
            kept,
            sorted(executions),
            [e for e in events.values() if e.artifact in chosen],
        )

    def _subgraph(
        self, artifacts: Iterable[str], executions: Iterable[str], events: list[Any]
    ) -> Any:
        found_artifacts = [
            r for a in dict.fromkeys(artifacts) if (r := self.records.get(ARTIFACTS, a)) is not None
        ]
        found_executions = [
            r
            for x in dict.fromkeys(executions)
            if (r := self.records.get(EXECUTIONS, x)) is not None
        ]
        return lineage_types.LineageSubgraph(
            artifacts=found_artifacts, executions=found_executions, events=events
        )

    def _etag(self) -> str:
        with self._lock:
            now = int(self.state.clock.now().timestamp() * 1000)
            self._last_etag = max(now, self._last_etag + 1)
            return str(self._last_etag)


def _field(resource: Any, name: str) -> Any:
    value = getattr(resource, name)
    if name == "state":
        return type(value)(value).name
    return value


def _ordered(found: list[Any], order_by: str) -> list[Any]:
    keys = []
    for part in reversed([p.strip() for p in order_by.split(",") if p.strip()]):
        name, _, direction = part.partition(" ")
        if name not in ("name", "display_name", "create_time", "update_time", "schema_title"):
            raise InputError.of(
                "order_by",
                f"{brief(name)}; accepted: name, display_name, schema_title, create_time, "
                "update_time, each optionally followed by desc",
            )
        keys.append((name, direction.strip().lower() == "desc"))
    for name, descending in keys:
        found = sorted(found, key=operator.attrgetter(name), reverse=descending)
    return found


def metadata_of(state: EmulatorState) -> MetadataRecords:
    """The one MetadataRecords of ``state``'s emulator."""
    return state.one(MetadataRecords, lambda: MetadataRecords(state))
