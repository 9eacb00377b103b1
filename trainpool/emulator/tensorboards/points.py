"""The data points of Vertex AI TensorBoard's time series, kept in the emulator's SQLite
file (table ``tensorboard_points``, one serialized ``TimeSeriesDataPoint`` a row).

Rules, as the API documents them (``google/cloud/aiplatform_v1/types/tensorboard_service.py``,
``tensorboard_time_series.py``, googleapis/python-aiplatform v1.165.1, commit
3219d51921dbc9b65734a793dbab9619d0a7547d):

- written points must name a time series of the run, with its ``value_type``; a series
  keeps its ``max_step`` and ``max_wall_time`` (``TensorboardTimeSeries.Metadata``);
- a read returns at most ``max_data_points`` points (-1: all; 0: :data:`DEFAULT_POINTS`),
  chosen evenly over the steps, the last always kept; Export pages them ("The default
  page_size is 1000. Values must be between 1 and 10000. Values above 10000 are coerced
  to 10000").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from google.cloud.aiplatform_v1.types import tensorboard_data as td
from google.cloud.aiplatform_v1.types import tensorboard_time_series as tts

from trainpool.emulator.api.rpc import not_found
from trainpool.emulator.records import paging
from trainpool.emulator.records.kinds import (
    TENSORBOARD_RUNS,
    TENSORBOARD_TIME_SERIES,
    TENSORBOARDS,
    Kind,
)
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError, brief

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tensorboard_points (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  series TEXT NOT NULL, step INTEGER NOT NULL, wall_time REAL NOT NULL, point BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS tensorboard_points_by_series ON tensorboard_points (series, step, seq);
"""
DEFAULT_POINTS = 1000
MAX_EXPORT_PAGE = 10_000
_VALUE = {
    tts.TensorboardTimeSeries.ValueType.SCALAR: "scalar",
    tts.TensorboardTimeSeries.ValueType.TENSOR: "tensor",
    tts.TensorboardTimeSeries.ValueType.BLOB_SEQUENCE: "blobs",
}


class TensorboardPoints:
    """The points of one emulator's time series (held by its ``TensorboardRecords``, whose
    ``require`` says which resources exist)."""

    def __init__(self, state: EmulatorState, require: Callable[[Kind, str], Any]) -> None:
        self.records = state.records
        self.db = state.db
        self.db.executescript(_SCHEMA)
        self._require = require

    def delete_under(self, name: str) -> None:
        """Forget the points of ``name`` (a time series) and of every series under it."""
        prefix = name + "/"
        with self.db.transaction() as conn:
            conn.execute(
                "DELETE FROM tensorboard_points WHERE series = ? OR substr(series, 1, ?) = ?",
                (name, len(prefix), prefix),
            )

    def write_run(self, run: str, data: Iterable[Any], field: str = "time_series_data") -> None:
        """WriteTensorboardRunData: the points of each series of ``run``."""
        self._require(TENSORBOARD_RUNS, run)
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
        series = self._require(TENSORBOARD_TIME_SERIES, series_name)
        if max_points < -1:
            raise InputError.of(
                "max_data_points", f"{max_points}; accepted: a positive number, or -1 for all"
            )
        points = self.points(series_name)
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
        self._require(TENSORBOARD_TIME_SERIES, series_name)
        if page_size < 0:
            raise InputError.of("page_size", f"{page_size}; accepted: 1 to {MAX_EXPORT_PAGE:,}")
        size = min(page_size or 1000, MAX_EXPORT_PAGE)
        points = self.points(series_name)
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

    def points(self, series_name: str) -> list[Any]:
        rows = self.db.read(
            "SELECT point FROM tensorboard_points WHERE series = ? ORDER BY step, seq",
            (series_name,),
        )
        return [td.TimeSeriesDataPoint.deserialize(row["point"]) for row in rows]

    def size(self, tensorboard: str) -> int:
        """ReadTensorboardSize: the bytes of every point stored under ``tensorboard``."""
        self._require(TENSORBOARDS, tensorboard)
        prefix = tensorboard + "/"
        rows = self.db.read(
            "SELECT COALESCE(SUM(length(point)), 0) AS n FROM tensorboard_points "
            "WHERE substr(series, 1, ?) = ?",
            (len(prefix), prefix),
        )
        return int(rows[0]["n"])
