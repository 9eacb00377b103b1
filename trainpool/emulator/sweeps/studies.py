"""A Vizier study's decisions over its stored trials: which parameters come next, whether an
active trial stops early, which trials are optimal, which measurement is final.

VizierService (:mod:`trainpool.emulator.sweeps.vizier_service`) keeps a study's trials as
records; each decision here is made afresh from them, with the sweep engine's own parts, so
a study served to a client and a HyperparameterTuningJob's study decide alike:

- parameters: :class:`trainpool.emulator.sweeps.suggestions.Search` (the grid, random
  search, optuna's TPE standing in for Vizier's Bayesian optimisation), told every stored
  trial first (:meth:`Search.replay`), seeded by the study and how many trials it holds, so
  a restarted emulator suggests as a running one would;
- early stopping: the study's ``automated_stopping_spec`` through
  :func:`trainpool.emulator.sweeps.trial_rules.stopping_rule` (median, decay curve, convex),
  a trial's measurements as its curve (``step_count``, or ``elapsed_duration`` with
  ``use_elapsed_duration``), the SUCCEEDED trials with a final measurement as the completed,
  less those the service stopped (STOPPING before they completed);
- the final measurement when CompleteTrial names none: "the service will auto-select a
  previously reported measurement as the final-measurement" (``CompleteTrialRequest``,
  aiplatform v1 ``vizier_service.proto``), the last or the best as
  ``measurementSelectionType`` says (:func:`trial_rules.measurement`'s rule); none at all
  makes the trial INFEASIBLE: "The service will set a Trial to INFEASIBLE when it's done
  but missing the final_measurement" (``Trial.State``, ``study.proto``);
- optimal trials: "The pareto-optimal Trials for multiple objective Study or the optimal
  trial for single objective Study" (``ListOptimalTrialsResponse``): among SUCCEEDED trials
  whose final measurement holds every metric, the best one (the first of equals), or every
  trial no other dominates.

Several metrics: suggestions and stopping follow the first metric, as a tuning job's do
(Vertex's multi-objective algorithm is not published).
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Sequence
from typing import Any

from google.cloud.aiplatform_v1.types import study as study_types

from trainpool.emulator.sweeps.suggestions import Params, Search
from trainpool.emulator.sweeps.trial_rules import (
    Completed,
    Curve,
    StopDecision,
    best,
    stopping_rule,
    worse,
)

Trial = study_types.Trial
Measurement = study_types.Measurement
TrialState = Trial.State


def params_of(trial: Any) -> Params:
    """A stored trial's parameters as ``{parameter_id: value}``."""
    return {p.parameter_id: p.value for p in trial.parameters}


def goals(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """``(metric_id, goal)`` of each of the study's metrics."""
    return [(m["metricId"], str(m.get("goal", "MAXIMIZE"))) for m in spec.get("metrics", [])]


def metric_value(measurement: Any, metric_id: str) -> float | None:
    for metric in measurement.metrics if measurement else ():
        if metric.metric_id == metric_id:
            return float(metric.value)
    return None


def objective(trial: Any, spec: dict[str, Any]) -> float | None:
    """The first metric of a SUCCEEDED trial's final measurement (None: none)."""
    if trial.state != TrialState.SUCCEEDED:
        return None
    return metric_value(trial.final_measurement, goals(spec)[0][0])


def suggest(
    spec: dict[str, Any], study_name: str, trials: Sequence[Any], count: int
) -> list[Params]:
    """Up to ``count`` new trials' parameters (fewer when the grid is exhausted)."""
    seed = zlib.crc32(study_name.encode()) + len(trials)
    search = Search(spec, seed=seed)
    if search.algorithm == "GRID_SEARCH":
        search.skip_grid([params_of(t) for t in trials])
    else:
        for trial in trials:
            finished = trial.state in (TrialState.SUCCEEDED, TrialState.INFEASIBLE)
            search.replay(params_of(trial), objective(trial, spec), finished)
    found: list[Params] = []
    while len(found) < count:
        asked = search.ask()
        if asked is None:
            break
        found.append(asked[1])
    return found


def room(spec: dict[str, Any], held: int) -> int:
    """How many more trials the study may have: ``studyStoppingConfig.maxNumTrials`` ("If
    there are more than this many trials, stop the study", ``StudySpec.StudyStoppingConfig``)
    less the ``held`` ones; unbounded without it."""
    config = spec.get("studyStoppingConfig")
    limit = config.get("maxNumTrials") if isinstance(config, dict) else None
    if limit is None:
        return 1 << 31
    return max(0, int(limit) - held)


def final_measurement(spec: dict[str, Any], trial: Any) -> Any | None:
    """The measurement CompleteTrial selects when the request has none (module docstring)."""
    metric_id, goal = goals(spec)[0]
    scored = [
        (value, m) for m in trial.measurements if (value := metric_value(m, metric_id)) is not None
    ]
    if not scored:
        return trial.measurements[-1] if trial.measurements else None
    if spec.get("measurementSelectionType") == "BEST_MEASUREMENT":
        pick = max if goal == "MAXIMIZE" else min
        return pick(scored, key=lambda item: item[0])[1]
    return scored[-1][1]


def _x(measurement: Any, elapsed: bool) -> float:
    if elapsed:
        duration = measurement.elapsed_duration
        return duration.total_seconds() if duration else 0.0
    return float(measurement.step_count)


def curve(trial: Any, metric_id: str, elapsed: bool) -> Curve:
    points = [(_x(m, elapsed), metric_value(m, metric_id)) for m in trial.measurements]
    return [(x, value) for x, value in points if value is not None]


def should_stop(
    spec: dict[str, Any], trial: Any, trials: Sequence[Any], stopped: Collection[str] = ()
) -> StopDecision | None:
    """Whether the study's stopping rule stops ``trial`` now (None: no rule, or not yet).
    Trials named in ``stopped`` (stopped early, then completed) are not compared against,
    as a sweep's are not (:mod:`trainpool.emulator.sweeps.trial_rules`: their curves end
    short of the steps they would be compared at)."""
    rule = stopping_rule(spec)
    if rule is None:
        return None
    metric_id, goal = goals(spec)[0]
    completed = []
    for other in trials:
        final = objective(other, spec)
        points = curve(other, metric_id, rule.use_elapsed_duration)
        if final is not None and points and other.name != trial.name and other.name not in stopped:
            completed.append(Completed(points, final))
    pending = curve(trial, metric_id, rule.use_elapsed_duration)
    if not pending:
        return None
    return rule.check(pending, completed, goal)


def _dominates(a: list[float], b: list[float], directions: list[str]) -> bool:
    no_worse = all(not worse(x, y, goal) for x, y, goal in zip(a, b, directions, strict=True))
    better = any(worse(y, x, goal) for x, y, goal in zip(a, b, directions, strict=True))
    return no_worse and better


def optimal(spec: dict[str, Any], trials: Sequence[Any]) -> list[Any]:
    """The optimal trial of a single-objective study, the Pareto front of a multi-objective
    one (module docstring)."""
    metrics = goals(spec)
    scored: list[tuple[Any, list[float]]] = []
    for trial in trials:
        if trial.state != TrialState.SUCCEEDED:
            continue
        values = [metric_value(trial.final_measurement, mid) for mid, _ in metrics]
        if all(v is not None for v in values):
            scored.append((trial, [float(v) for v in values if v is not None]))
    if not scored:
        return []
    directions = [goal for _, goal in metrics]
    if len(metrics) == 1:
        top = best([values[0] for _, values in scored], directions[0])
        return [next(trial for trial, values in scored if values[0] == top)]
    return [
        trial
        for trial, values in scored
        if not any(_dominates(other, values, directions) for _, other in scored)
    ]
