"""The trials of a HyperparameterTuningJob (REST JSON) as flat rows, and the best of them."""

from __future__ import annotations

from typing import Any


def trial_rows(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Every trial of a finished job (REST JSON) as a flat, readable row."""
    rows = []
    for trial in job.get("trials", []):
        measurement = trial.get("finalMeasurement", {})
        rows.append(
            {
                "id": trial["id"],
                "state": trial.get("state", ""),
                "parameters": {
                    p["parameterId"]: p.get("value") for p in trial.get("parameters", [])
                },
                "metrics": {m["metricId"]: m.get("value") for m in measurement.get("metrics", [])},
                "custom_job": trial.get("customJob", ""),
                "infeasible_reason": trial.get("infeasibleReason", ""),
            }
        )
    return rows


def best_trial(rows: list[dict[str, Any]], metric_id: str, goal: str) -> dict[str, Any] | None:
    """The measured trial with the best ``metric_id`` (ties: the lowest trial id)."""
    measured = [r for r in rows if isinstance(r["metrics"].get(metric_id), int | float)]
    if not measured:
        return None
    sign = -1.0 if goal == "MAXIMIZE" else 1.0
    return min(measured, key=lambda r: (sign * r["metrics"][metric_id], int(r["id"])))
