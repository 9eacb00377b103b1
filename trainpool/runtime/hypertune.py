"""Metric reporting in the cloudml-hypertune file format, and a reader for that format.

Each report appends one JSON line (keys sorted; every value a string except
``timestamp``) and the file is rewritten with the last 100 reports, exactly as
cloudml-hypertune 0.1.0.dev6 does, so Vertex and the local emulator read either.
"""

from __future__ import annotations

import collections
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_METRIC_TAG = "training/hptuning/metric"
DEFAULT_METRIC_PATH = "/tmp/hypertune/output.metrics"
MAX_ENTRIES = 100
_FIXED_KEYS = ("timestamp", "trial", "global_step", "checkpoint_path")


class Reporter:
    """Writes the metric file of one trial; keeps the last 100 reports, like cloudml-hypertune."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.metric_path = env.get("CLOUD_ML_HP_METRIC_FILE", DEFAULT_METRIC_PATH)
        self.trial_id = env.get("CLOUD_ML_TRIAL_ID", "0")
        self._queue: collections.deque[dict[str, Any]] = collections.deque(maxlen=MAX_ENTRIES)

    def report(
        self,
        metric_id: str,
        value: float,
        global_step: int | None = None,
        checkpoint_path: str = "",
    ) -> None:
        """Record ``metric_id = value`` and rewrite the metric file."""
        body = {
            "timestamp": time.time(),
            "trial": str(self.trial_id),
            metric_id or DEFAULT_METRIC_TAG: str(float(value)),
            "global_step": str(int(global_step) if global_step else 0),
            "checkpoint_path": checkpoint_path,
        }
        self._queue.append(body)
        directory = os.path.dirname(self.metric_path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        partial = f"{self.metric_path}.{os.getpid()}.tmp"
        with open(partial, "w") as out:
            out.writelines(json.dumps(entry, sort_keys=True) + "\n" for entry in self._queue)
        os.replace(partial, self.metric_path)


_reporters: dict[str, Reporter] = {}


def report_metric(
    metric_id: str,
    value: float,
    global_step: int | None = None,
    checkpoint_path: str = "",
) -> None:
    """Report one value of ``metric_id`` (the study's ``metricId``) for this trial."""
    path = os.environ.get("CLOUD_ML_HP_METRIC_FILE", DEFAULT_METRIC_PATH)
    reporter = _reporters.get(path)
    if reporter is None:
        reporter = _reporters[path] = Reporter()
    reporter.report(metric_id, value, global_step, checkpoint_path)


@dataclass(frozen=True)
class MetricRecord:
    """One line of a metric file."""

    timestamp: float
    trial: str
    global_step: int
    checkpoint_path: str
    values: dict[str, float]


def _record(line: str, where: str) -> MetricRecord:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: not a JSON line ({err.msg}): {line[:200]!r}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: {line[:200]!r} is not a JSON object")
    try:
        values = {k: float(v) for k, v in raw.items() if k not in _FIXED_KEYS}
        return MetricRecord(
            timestamp=float(raw.get("timestamp", 0.0)),
            trial=str(raw.get("trial", "0")),
            global_step=int(float(raw.get("global_step", 0) or 0)),
            checkpoint_path=str(raw.get("checkpoint_path", "")),
            values=values,
        )
    except (TypeError, ValueError):
        raise ValueError(f"{where}: a value is not a number: {line[:200]!r}") from None


def read_metrics(path: str) -> list[MetricRecord]:
    """Every record of the metric file at ``path`` ([] when it does not exist yet).

    An unfinished last line (a writer caught mid-write) is skipped; any other bad
    line is an error naming the file and the line number.
    """
    try:
        with open(path) as src:
            text = src.read()
    except FileNotFoundError:
        return []
    lines = text.split("\n")
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        unfinished = number == len(lines) and not text.endswith("\n")
        try:
            records.append(_record(line, f"{path}:{number}"))
        except ValueError:
            if not unfinished:
                raise
    return records


def latest(records: list[MetricRecord], metric_id: str) -> float | None:
    """The last reported value of ``metric_id``, or None when it was never reported."""
    for record in reversed(records):
        if metric_id in record.values:
            return record.values[metric_id]
    return None
