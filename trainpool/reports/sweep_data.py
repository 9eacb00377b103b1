"""What a trials report shows, read from a HyperparameterTuningJob's REST JSON.

Which trials a stopping rule stopped early is not in the job resource (``Trial.State`` has
no such state; a stopped trial ends SUCCEEDED): the caller passes it in, trial id -> the
message of the trial's CustomJob (``trainpool.vertex.sweep.stopped_trials``). The step a
trial stopped at is the one that message names ("... at step 4: ...", the emulator's
wording), else the trial's last reported step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainpool.spec.study import enum_name
from trainpool.spec.trials import best_trial, trial_rows

Steps = list[tuple[int, float]]
AT_STEP = re.compile(r"\bat step (\d+)\b")


@dataclass(frozen=True)
class Stopped:
    """A trial a stopping rule stopped early: the step it stopped at, and why."""

    step: int
    why: str


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
    stopped: dict[str, Stopped] = field(default_factory=dict)

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


def stop_of(why: str, steps: Steps) -> Stopped:
    """Where a stopped trial stopped: the step its message names, else its last step."""
    named = AT_STEP.search(why)
    return Stopped(int(named.group(1)) if named else (steps[-1][0] if steps else 0), why)


def from_job(job: dict[str, Any], stopped: Mapping[str, str] | None = None) -> Sweep:
    """The report's view of a HyperparameterTuningJob (REST JSON, enums as names or numbers);
    ``stopped``: the trials a stopping rule stopped early, trial id -> why."""
    study = job["studySpec"]
    metric = study["metrics"][0]
    metric_id, goal = metric["metricId"], enum_name("goal", metric.get("goal", "MAXIMIZE"))
    rows = trial_rows(job)
    best = best_trial(rows, metric_id, goal)
    steps = {t["id"]: trial_steps(t, metric_id) for t in job.get("trials", [])}
    return Sweep(
        name=job.get("displayName") or job.get("name", ""),
        state=str(job.get("state", "")),
        metric_id=metric_id,
        goal=goal,
        parameters=tuple(parameter(p) for p in study.get("parameters", [])),
        trials=rows,
        steps=steps,
        best_id=best["id"] if best else None,
        stopped={k: stop_of(why, steps.get(k, [])) for k, why in (stopped or {}).items()},
    )
