"""What a trials report shows, read from a HyperparameterTuningJob's REST JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainpool.spec.study import enum_name
from trainpool.spec.trials import best_trial, trial_rows

Steps = list[tuple[int, float]]


@dataclass(frozen=True)
class Parameter:
    """One study parameter and the axis it is drawn on: "log", "linear" or "categorical"."""

    id: str
    scale: str
    categories: tuple[str, ...] = ()


@dataclass(frozen=True)
class Sweep:
    """A sweep as the report draws it; ``trials`` are ``trial_rows``, ``steps`` per trial id."""

    name: str
    state: str
    metric_id: str
    goal: str
    parameters: tuple[Parameter, ...]
    trials: list[dict[str, Any]]
    steps: dict[str, Steps]
    best_id: str | None

    def measured(self) -> list[dict[str, Any]]:
        """Trials that reported the metric, in trial order."""
        return [t for t in self.trials if isinstance(t["metrics"].get(self.metric_id), int | float)]


def parameter(spec: dict[str, Any]) -> Parameter:
    """The axis of one ``StudySpec.parameters`` entry (REST JSON)."""
    if "categoricalValueSpec" in spec:
        values = spec["categoricalValueSpec"].get("values", [])
        return Parameter(spec["parameterId"], "categorical", tuple(str(v) for v in values))
    log = enum_name("scaleType", spec.get("scaleType", "")) == "UNIT_LOG_SCALE"
    return Parameter(spec["parameterId"], "log" if log else "linear")


def trial_steps(trial: dict[str, Any], metric_id: str) -> Steps:
    """``(step, value)`` of every intermediate measurement of ``metric_id``, by step."""
    steps = []
    for measurement in trial.get("measurements", []):
        for metric in measurement.get("metrics", []):
            if metric.get("metricId") == metric_id and "value" in metric:
                steps.append((int(measurement.get("stepCount", 0)), float(metric["value"])))
    return sorted(steps)


def from_job(job: dict[str, Any]) -> Sweep:
    """The report's view of a HyperparameterTuningJob (REST JSON, enums as names or numbers)."""
    study = job["studySpec"]
    metric = study["metrics"][0]
    metric_id, goal = metric["metricId"], enum_name("goal", metric.get("goal", "MAXIMIZE"))
    rows = trial_rows(job)
    best = best_trial(rows, metric_id, goal)
    return Sweep(
        name=job.get("displayName") or job.get("name", ""),
        state=str(job.get("state", "")),
        metric_id=metric_id,
        goal=goal,
        parameters=tuple(parameter(p) for p in study.get("parameters", [])),
        trials=rows,
        steps={t["id"]: trial_steps(t, metric_id) for t in job.get("trials", [])},
        best_id=best["id"] if best else None,
    )
