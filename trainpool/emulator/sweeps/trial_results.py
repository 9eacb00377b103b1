"""A finished trial as the sweep records it: its measurements, its final measurement or why
it is infeasible (``Trial`` in aiplatform_v1 ``study.py``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from google.cloud.aiplatform_v1.types import study as study_types
from google.protobuf import duration_pb2

from trainpool.runtime.hypertune import MetricRecord, read_metrics

Trial = study_types.Trial


def read_records(metric_file: Path) -> tuple[list[MetricRecord], str]:
    """Every record of a trial's metric file, and why it cannot be read ("" when it can)."""
    try:
        return read_metrics(str(metric_file)), ""
    except ValueError as err:  # a line the trainer wrote is not a measurement
        return [], str(err)


def step(record: MetricRecord, started: float) -> study_types.Measurement:
    """One reported step as a ``Measurement``: every metric of the record, its step, and
    the time since the trial started (``started``: the real POSIX time the trial started;
    the record's timestamp is the trainer's, in real time)."""
    elapsed = max(0.0, record.timestamp - started)
    return study_types.Measurement(
        step_count=record.global_step,
        elapsed_duration=timedelta(seconds=elapsed),
        metrics=[{"metric_id": k, "value": v} for k, v in record.values.items()],
    )


def recorder(
    trial_id: str,
    records: list[MetricRecord],
    result: tuple[float, int] | None,
    reason: str,
    metric_id: str,
    ended: datetime,
    started: float,
) -> Callable[[Any], None]:
    """The change that records trial ``trial_id`` on its HyperparameterTuningJob: every
    measurement (timed from ``started``, the real POSIX time the trial started); SUCCEEDED
    with ``result`` (value, step) as its final measurement, or INFEASIBLE with ``reason``.
    ``ended`` is on the emulator's clock, as the trial's ``start_time``."""

    def record(job: Any) -> None:
        trial = job.trials[int(trial_id) - 1]
        trial.end_time = ended
        trial.measurements = [step(r, started) for r in records]
        if result is None:
            trial.state = Trial.State.INFEASIBLE
            trial.infeasible_reason = reason
            return
        trial.state = Trial.State.SUCCEEDED
        elapsed = ended - datetime.fromisoformat(trial.start_time.isoformat())
        trial.final_measurement = study_types.Measurement(
            step_count=result[1],
            elapsed_duration=duration_pb2.Duration(seconds=int(elapsed.total_seconds())),
            metrics=[{"metric_id": metric_id, "value": result[0]}],
        )

    return record
