"""Vertex ML Metadata kept in the emulator's SQLite file: stores, contexts, artifacts,
executions and schemas, created, read, updated, deleted, listed and purged.

Resources are rows of the one ``resources`` table (:mod:`trainpool.emulator.records`), under
their MetadataStore (``projects/P/locations/L/metadataStores/S``). The links between them
(a Context's members and children, an Execution's events) are
:mod:`trainpool.emulator.metadata.links`; what a filter matches,
:mod:`trainpool.emulator.metadata.matching`; the lineage subgraphs read from the links,
:mod:`trainpool.emulator.metadata.subgraphs`.

Rules, as the API documents them (``google/cloud/aiplatform_v1/types/metadata_service.py``
and ``context.py``, googleapis/python-aiplatform v1.165.1, commit
3219d51921dbc9b65734a793dbab9619d0a7547d):

- an id given by the client "Must be 4-128 characters in length. Valid characters are
  /[a-z][0-9]-/. Must be unique across all ... in the parent MetadataStore. (Otherwise the
  request will fail with ALREADY_EXISTS ...)"; one not given is generated (here: digits,
  as Vertex's are);
- an update whose ``etag`` is set and is not the stored one is ABORTED, "Specified Context
  `etag`: `X` does not match server `etag`: `Y`" (what Vertex answered in
  googleapis/python-aiplatform#1674); every write gives a new etag;
- Purge* deletes what a filter matches, at most :data:`MAX_PURGE` at a time, and only
  counts them (``purge_count``, ``purge_sample``) unless ``force``.

A resource in a MetadataStore that does not exist is NOT_FOUND, naming the store.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import field_mask_pb2

from trainpool.emulator.api.rpc import RpcError, already_exists, not_found
from trainpool.emulator.metadata.links import MetadataLinks, require
from trainpool.emulator.metadata.matching import in_store, matching, ordered
from trainpool.emulator.records import paging
from trainpool.emulator.records.kinds import (
    ARTIFACTS,
    CONTEXTS,
    EXECUTIONS,
    METADATA_SCHEMAS,
    METADATA_STORES,
    Kind,
)
from trainpool.emulator.records.resources import AlreadyExists
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError, brief

ID = re.compile(r"[a-z0-9-]{4,128}")
ID_RULE = "4-128 characters of lowercase letters, digits and '-'"
MAX_PURGE = 10_000
"""How many resources one Purge deletes (``PurgeArtifactsResponse.purge_sample``: "The
maximum number of samples is 100"; the emulator bounds the purge itself too)."""
MAX_SAMPLE = 100
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


@dataclass
class Page:
    items: list[Any]
    next_token: str


class MetadataRecords:
    """The ML Metadata of one emulator (one per server, made by its wiring:
    ``trainpool.emulator.server``)."""

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.records = state.records
        self.db = state.db
        self._lock = threading.RLock()
        self.links = MetadataLinks(state, self._lock)
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
            for resource in in_store(self.links, kind, name):
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
        return require(self.records, kind, name)

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
            for child in self.links.members(name, "context"):
                self.links.set_parents(child, lambda parents: [p for p in parents if p != name])
        self.records.delete(kind, name)
        self.links.forget(name)

    def purge(self, kind: Kind, parent: str, filter: str, force: bool) -> tuple[int, list[str]]:
        """Purge*: how many match ``filter`` (and a sample); deleted when ``force``."""
        if not filter.strip():
            raise InputError.of("filter", "is empty; accepted: a filter naming what to purge")
        self.require_store(parent)
        matched = [r.name for r in matching(self.links, kind, parent, filter)][:MAX_PURGE]
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
        found = matching(self.links, kind, parent, filter)
        if order_by:
            found = ordered(found, order_by)
        page = found[start : start + size]
        token = str(start + size) if len(found) > start + size else ""
        return Page(page, token)

    def _etag(self) -> str:
        with self._lock:
            now = int(self.state.clock.now().timestamp() * 1000)
            self._last_etag = max(now, self._last_etag + 1)
            return str(self._last_etag)
