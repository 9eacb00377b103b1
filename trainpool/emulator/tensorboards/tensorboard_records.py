"""Vertex AI TensorBoard kept in the emulator's SQLite file: Tensorboards, their experiments,
runs and time series (rows of the ``resources`` table). The data points written to them are
:mod:`trainpool.emulator.tensorboards.points` (``TensorboardRecords.points``).

Rules, as the API documents them (``google/cloud/aiplatform_v1/types/tensorboard_service.py``,
``tensorboard_time_series.py``, googleapis/python-aiplatform v1.165.1, commit
3219d51921dbc9b65734a793dbab9619d0a7547d):

- experiment and run ids: "1-128 characters, and valid characters are /[a-z][0-9]-/";
  a time series id "should match [a-z0-9][a-z0-9-]{0, 127}" (generated when empty);
- a time series' display name is unique in its run: a second one is INVALID_ARGUMENT
  saying it already exists, which the SDK's uploader reads as "look it up by display
  name" (``tensorboard/uploader_utils.py``, ``_create_or_get_time_series``);
- a Batch create takes "A maximum of 1000" requests, each under the batch's experiment;
- one Tensorboard of a location is the default (``is_default``): making another the
  default unsets the first;
- a Tensorboard's blobs (graphs, profiles) go to ``blob_storage_path_prefix``
  (``BUCKET/FOLDER``, as the uploader reads it:
  ``uploader_utils.get_blob_storage_bucket_and_folder``): here a bucket of the local
  store, :data:`BLOB_BUCKET` and the project.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from google.cloud.aiplatform_v1.types import tensorboard_time_series as tts

from trainpool.emulator.api.rpc import already_exists, invalid, not_found
from trainpool.emulator.metadata import filters
from trainpool.emulator.records import paging
from trainpool.emulator.records.kinds import (
    TENSORBOARD_EXPERIMENTS,
    TENSORBOARD_RUNS,
    TENSORBOARD_TIME_SERIES,
    TENSORBOARDS,
    Kind,
)
from trainpool.emulator.records.resources import AlreadyExists
from trainpool.emulator.state import EmulatorState
from trainpool.emulator.tensorboards.points import TensorboardPoints
from trainpool.errors import InputError, brief

RUN_ID = re.compile(r"[a-z0-9-]{1,128}")
SERIES_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,127}")
MAX_BATCH = 1000
MAX_TENSORBOARD_PAGE = 100
BLOB_BUCKET = "trainpool-tensorboards"
"""Blobs of a project's Tensorboards go to the local bucket ``trainpool-tensorboards-PROJECT``."""


class TensorboardRecords:
    """The Tensorboards of one emulator (one per server, made by its wiring:
    ``trainpool.emulator.server``)."""

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.records = state.records
        self.db = state.db
        self._lock = threading.RLock()
        self.points = TensorboardPoints(state, self.require)

    # -- resources --------------------------------------------------------------------------

    def create(self, kind: Kind, parent: str, resource_id: str, resource: Any, field: str) -> Any:
        if kind is not TENSORBOARDS:
            self.require(_PARENT_KIND[kind.collection], parent)
        rule = SERIES_ID if kind is TENSORBOARD_TIME_SERIES else RUN_ID
        if kind is TENSORBOARDS:
            resource_id = self.state.new_id("tensorboard")
        elif kind is TENSORBOARD_TIME_SERIES and not resource_id:
            resource_id = self.state.new_id("tensorboard")
        if not rule.fullmatch(resource_id):
            accepted = (
                "[a-z0-9][a-z0-9-]{0,127}"
                if kind is TENSORBOARD_TIME_SERIES
                else "1-128 lowercase letters, digits and '-'"
            )
            raise InputError.of(field, f"{brief(resource_id)}; accepted: {accepted}")
        resource.name = f"{parent}/{kind.collection}/{resource_id}"
        now = self.state.clock.now()
        resource.create_time = resource.update_time = now
        resource.etag = str(self.state.new_id("etag"))
        with self._lock:
            if kind is TENSORBOARD_TIME_SERIES:
                self._check_series(parent, resource)
            if kind is TENSORBOARDS:
                project = parent.split("/")[1]
                bucket = f"{BLOB_BUCKET}-{project}"[:63].rstrip("-")
                (self.state.home.gcs / bucket).mkdir(parents=True, exist_ok=True)
                resource.blob_storage_path_prefix = f"{bucket}/tensorboard-{resource_id}"
                if resource.is_default:
                    self._undefault(parent)
            try:
                return self.with_counts(self.records.insert(kind, parent, resource))
            except AlreadyExists:
                raise already_exists(f"{kind.label} {resource.name} already exists.") from None

    def _check_series(self, run: str, series: Any) -> None:
        if not series.display_name:
            raise InputError.of(
                "tensorboard_time_series.display_name", "is empty; accepted: the tag's name"
            )
        if series.value_type == tts.TensorboardTimeSeries.ValueType.VALUE_TYPE_UNSPECIFIED:
            raise InputError.of(
                "tensorboard_time_series.value_type",
                "is VALUE_TYPE_UNSPECIFIED; accepted: SCALAR, TENSOR or BLOB_SEQUENCE",
            )
        for other in self._children(TENSORBOARD_TIME_SERIES, run):
            if other.display_name == series.display_name:
                raise invalid(
                    f"TensorboardTimeSeries with display name {series.display_name!r} already "
                    f"exists in {run}: {other.name}"
                )

    def _undefault(self, parent: str) -> None:
        for found in self._children(TENSORBOARDS, parent):
            if found.is_default:
                self.records.update(
                    TENSORBOARDS, found.name, lambda t: setattr(t, "is_default", False)
                )

    def require(self, kind: Kind, name: str) -> Any:
        found = self.records.get(kind, name)
        if found is None:
            raise not_found(f"{kind.label} {name} not found.")
        return self.with_counts(found) if kind is TENSORBOARDS else found

    def with_counts(self, resource: Any) -> Any:
        """A Tensorboard with its ``run_count`` (output only) counted."""
        if isinstance(resource, TENSORBOARDS.message):
            rows = self.db.read(
                "SELECT COUNT(*) AS n FROM resources WHERE kind = ? AND substr(name, 1, ?) = ?",
                (TENSORBOARD_RUNS.collection, len(resource.name) + 1, resource.name + "/"),
            )
            resource.run_count = int(rows[0]["n"])
        return resource

    def update(self, kind: Kind, resource: Any, paths: list[str], allowed: tuple[str, ...]) -> Any:
        unknown = [p for p in paths if p not in allowed]
        if unknown:
            raise InputError.of(
                "update_mask",
                f"{brief(', '.join(unknown), quoted=False)} cannot be updated; accepted: "
                f"{', '.join(allowed)}",
            )
        with self._lock:
            stored = self.require(kind, resource.name)
            fields = paths or [f for f in allowed if getattr(resource, f)]
            if kind is TENSORBOARD_TIME_SERIES and "display_name" in fields:
                parent = stored.name.rsplit("/timeSeries/", 1)[0]
                for other in self._children(TENSORBOARD_TIME_SERIES, parent):
                    if other.name != stored.name and other.display_name == resource.display_name:
                        raise invalid(
                            f"TensorboardTimeSeries with display name {resource.display_name!r} "
                            f"already exists in {parent}: {other.name}"
                        )
            if kind is TENSORBOARDS and "is_default" in fields and resource.is_default:
                self._undefault(stored.name.rsplit("/tensorboards/", 1)[0])
            etag = str(self.state.new_id("etag"))

            def change(current: Any) -> None:
                for path in fields:
                    setattr(current, path, getattr(resource, path))
                current.etag = etag

            return self.with_counts(self.records.update(kind, resource.name, change))

    def delete(self, kind: Kind, name: str) -> None:
        self.require(kind, name)
        prefix = name + "/"
        rows = self.db.read(
            "SELECT name, kind FROM resources WHERE substr(name, 1, ?) = ?",
            (len(prefix), prefix),
        )
        self.points.delete_under(name)
        for row in rows:
            self.records.delete(_KINDS[row["kind"]], row["name"])
        self.records.delete(kind, name)

    def page(
        self,
        kind: Kind,
        parent: str,
        *,
        filter: str,
        page_size: int,
        page_token: str,
        order_by: str = "",
    ) -> tuple[list[Any], str]:
        if kind is not TENSORBOARDS:
            self.require(_PARENT_KIND[kind.collection], parent)
        parsed = filters.parse(filter, _SUBJECTS[kind.collection])
        size = paging.page_size(page_size)
        if kind is TENSORBOARDS:
            size = min(size, MAX_TENSORBOARD_PAGE)
        start = paging.page_after(page_token)
        found = [r for r in self._children(kind, parent) if parsed(r)]
        if order_by:
            name, _, direction = order_by.strip().partition(" ")
            if name not in ("create_time", "update_time", "display_name", "name"):
                raise InputError.of(
                    "order_by",
                    f"{brief(order_by)}; accepted: create_time, update_time, display_name or "
                    "name, optionally followed by desc",
                )
            found.sort(key=lambda r: getattr(r, name), reverse=direction.strip() == "desc")
        items = [self.with_counts(r) for r in found[start : start + size]]
        return items, str(start + size) if len(found) > start + size else ""

    def _children(self, kind: Kind, parent: str) -> list[Any]:
        rows = self.db.read(
            "SELECT proto FROM resources WHERE kind = ? AND parent = ? ORDER BY seq",
            (kind.collection, parent),
        )
        return [kind.message.deserialize(row["proto"]) for row in rows]


_PARENT_KIND = {
    TENSORBOARD_EXPERIMENTS.collection: TENSORBOARDS,
    TENSORBOARD_RUNS.collection: TENSORBOARD_EXPERIMENTS,
    TENSORBOARD_TIME_SERIES.collection: TENSORBOARD_RUNS,
}
_KINDS = {
    kind.collection: kind
    for kind in (TENSORBOARDS, TENSORBOARD_EXPERIMENTS, TENSORBOARD_RUNS, TENSORBOARD_TIME_SERIES)
}


def _field(resource: Any, name: str) -> Any:
    value = getattr(resource, name)
    return type(value)(value).name if name == "value_type" else value


def _subject(*extra: str) -> filters.Subject:
    fields = frozenset({"name", "display_name", "create_time", "update_time", *extra})
    return filters.Subject(fields, _field, {}, {})


_SUBJECTS = {
    TENSORBOARDS.collection: _subject("is_default", "description"),
    TENSORBOARD_EXPERIMENTS.collection: _subject("description", "source"),
    TENSORBOARD_RUNS.collection: _subject("description"),
    TENSORBOARD_TIME_SERIES.collection: _subject("description", "value_type", "plugin_name"),
}
