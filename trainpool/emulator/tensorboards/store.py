"""Vertex AI TensorBoard kept in the emulator's SQLite file: Tensorboards, their experiments,
runs and time series (rows of the ``resources`` table), and the data points written to
them (table ``tensorboard_points``, one serialized ``TimeSeriesDataPoint`` a row).

Rules, as the API documents them (``google/cloud/aiplatform_v1/types/tensorboard_service.py``,
``tensorboard_time_series.py``, googleapis/python-aiplatform v1.165.1, commit
3219d51921dbc9b65734a793dbab9619d0a7547d):

- experiment and run ids: "1-128 characters, and valid characters are /[a-z][0-9]-/";
  a time series id "should match [a-z0-9][a-z0-9-]{0, 127}" (generated when empty);
- a time series' display name is unique in its run: a second one is INVALID_ARGUMENT
  saying it already exists, which the SDK's uploader reads as "look it up by display
  name" (``tensorboard/uploader_utils.py``, ``_create_or_get_time_series``);
- a Batch create takes "A maximum of 1000" requests, each under the batch's experiment;
- written points must name a time series of the run, with its ``value_type``; a series
  keeps its ``max_step`` and ``max_wall_time`` (``TensorboardTimeSeries.Metadata``);
- a read returns at most ``max_data_points`` points (-1: all; 0: :data:`DEFAULT_POINTS`),
  chosen evenly over the steps, the last always kept; Export pages them ("The default
  page_size is 1000. Values must be between 1 and 10000. Values above 10000 are coerced
  to 10000");
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
from collections.abc import Iterable
from typing import Any

from google.cloud.aiplatform_v1.types import tensorboard_data as td
from google.cloud.aiplatform_v1.types import tensorboard_time_series as tts

from trainpool.emulator.api.rpc import already_exists, invalid, not_found
from trainpool.emulator.metadata import filters
from trainpool.emulator.records import paging
from trainpool.emulator.records.kinds import (
    TENSORBOARD_EXPERIMENTS,
    TENSORBOARD_RUNS,
    TENSORBOARD_TIME_SERIES,
    TENSORBOARDS,
)
from trainpool.emulator.records.resources import AlreadyExists, Kind
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError, brief

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tensorboard_points (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  series TEXT NOT NULL, step INTEGER NOT NULL, wall_time REAL NOT NULL, point BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS tensorboard_points_by_series ON tensorboard_points (series, step, seq);
"""
RUN_ID = re.compile(r"[a-z0-9-]{1,128}")
SERIES_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,127}")
MAX_BATCH = 1000
DEFAULT_POINTS = 1000
MAX_EXPORT_PAGE = 10_000
MAX_TENSORBOARD_PAGE = 100
BLOB_BUCKET = "trainpool-tensorboards"
"""Blobs of a project's Tensorboards go to the local bucket ``trainpool-tensorboards-PROJECT``."""
_VALUE = {
    tts.TensorboardTimeSeries.ValueType.SCALAR: "scalar",
    tts.TensorboardTimeSeries.ValueType.TENSOR: "tensor",
    tts.TensorboardTimeSeries.ValueType.BLOB_SEQUENCE: "blobs",
}


class TensorboardRecords:
    """The Tensorboards of one emulator (one per server: :func:`tensorboards_of`)."""

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.records = state.records
        self.db = state.db
        self.db.executescript(_SCHEMA)
        self._lock = threading.RLock()

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
        with self.db.transaction() as conn:
            conn.execute(
                "DELETE FROM tensorboard_points WHERE series = ? OR substr(series, 1, ?) = ?",
                (name, len(prefix), prefix),
            )
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

    # -- data -------------------------------------------------------------------------------

    def write_run(self, run: str, data: Iterable[Any], field: str = "time_series_data") -> None:
        """WriteTensorboardRunData: the points of each series of ``run``."""
        self.require(TENSORBOARD_RUNS, run)
        rows = []
        tops: dict[str, tuple[int, Any, int]] = {}
        for index, series_data in enumerate(data):
            where = f"{field}[{index}]"
            name = f"{run}/timeSeries/{series_data.tensorboard_time_series_id}"
            series = self.records.get(TENSORBOARD_TIME_SERIES, name)
            if series is None:
                raise not_found(
                    f"TensorboardTimeSeries {series_data.tensorboard_time_series_id!r} "
                    f"({where}.tensorboard_time_series_id) not found in {run}."
                )
            if series_data.value_type and series_data.value_type != series.value_type:
                raise InputError.of(
                    f"{where}.value_type",
                    f"{series_data.value_type.name}; accepted: {series.value_type.name}, the "
                    "time series' value type",
                )
            wanted = _VALUE.get(series.value_type, "")
            for number, point in enumerate(series_data.values):
                raw = td.TimeSeriesDataPoint.pb(point)
                given = raw.WhichOneof("value")
                if given != wanted:
                    raise InputError.of(
                        f"{where}.values[{number}]",
                        f"holds {given or 'no value'}; accepted: {wanted}, as the time series' "
                        f"value type {series.value_type.name} says",
                    )
                wall = raw.wall_time.seconds + raw.wall_time.nanos / 1e9
                rows.append((name, int(point.step), wall, raw.SerializeToString()))
                step, seconds, blobs = tops.get(name, (-(2**63), None, 0))
                length = len(point.blobs.values) if given == "blobs" else 0
                if seconds is None or wall > seconds.timestamp():
                    seconds = point.wall_time
                tops[name] = (max(step, int(point.step)), seconds, max(blobs, length))
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT INTO tensorboard_points (series, step, wall_time, point) "
                "VALUES (?, ?, ?, ?)",
                rows,
            )
        for name, (step, wall, blobs) in tops.items():

            def change(series: Any, step: int = step, wall: Any = wall, blobs: int = blobs) -> None:
                meta = series.metadata
                meta.max_step = max(int(meta.max_step), step)
                if wall is not None and (
                    not meta.max_wall_time or wall.timestamp() > meta.max_wall_time.timestamp()
                ):
                    meta.max_wall_time = wall
                meta.max_blob_sequence_length = max(int(meta.max_blob_sequence_length), blobs)

            self.records.update(TENSORBOARD_TIME_SERIES, name, change, stamp=False)

    def read(self, series_name: str, max_points: int) -> Any:
        """``TimeSeriesData`` of a series: at most ``max_points`` points, evenly chosen."""
        series = self.require(TENSORBOARD_TIME_SERIES, series_name)
        if max_points < -1:
            raise InputError.of(
                "max_data_points", f"{max_points}; accepted: a positive number, or -1 for all"
            )
        points = self._points(series_name)
        limit = DEFAULT_POINTS if max_points == 0 else max_points
        if limit != -1 and len(points) > limit:
            last = len(points) - 1
            keep = sorted(
                {round(i * last / (limit - 1)) for i in range(limit)} if limit > 1 else {last}
            )
            points = [points[i] for i in keep]
        return td.TimeSeriesData(
            tensorboard_time_series_id=series_name.rsplit("/", 1)[-1],
            value_type=series.value_type,
            values=points,
        )

    def export(
        self, series_name: str, page_size: int, page_token: str, order_by: str
    ) -> tuple[list[Any], str]:
        self.require(TENSORBOARD_TIME_SERIES, series_name)
        if page_size < 0:
            raise InputError.of("page_size", f"{page_size}; accepted: 1 to {MAX_EXPORT_PAGE:,}")
        size = min(page_size or 1000, MAX_EXPORT_PAGE)
        points = self._points(series_name)
        name, _, direction = order_by.strip().partition(" ")
        if name not in ("", "step", "wall_time"):
            raise InputError.of(
                "order_by", f"{brief(order_by)}; accepted: step or wall_time, optionally desc"
            )
        if name == "wall_time":
            points.sort(key=lambda p: p.wall_time)
        if direction.strip() == "desc":
            points.reverse()
        start = paging.page_after(page_token)
        return points[start : start + size], str(start + size) if len(points) > start + size else ""

    def _points(self, series_name: str) -> list[Any]:
        rows = self.db.read(
            "SELECT point FROM tensorboard_points WHERE series = ? ORDER BY step, seq",
            (series_name,),
        )
        return [td.TimeSeriesDataPoint.deserialize(row["point"]) for row in rows]

    def size(self, tensorboard: str) -> int:
        """ReadTensorboardSize: the bytes of every point stored under ``tensorboard``."""
        self.require(TENSORBOARDS, tensorboard)
        prefix = tensorboard + "/"
        rows = self.db.read(
            "SELECT COALESCE(SUM(length(point)), 0) AS n FROM tensorboard_points "
            "WHERE substr(series, 1, ?) = ?",
            (len(prefix), prefix),
        )
        return int(rows[0]["n"])


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


def tensorboards_of(state: EmulatorState) -> TensorboardRecords:
    """The one TensorboardRecords of ``state``'s emulator."""
    return state.one(TensorboardRecords, lambda: TensorboardRecords(state))
