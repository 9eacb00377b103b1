"""A sweep's rules for its trials, written once: which measurement counts, when failed
trials fail the sweep, and when a running trial is stopped early.

Applied by :mod:`trainpool.emulator.sweeps.sweep` (the stopping rules through
:mod:`trainpool.emulator.sweeps.early_stopping`); a job's own failure rules (restarts, retries) are
:mod:`trainpool.emulator.jobs.failure_rules`.

Which measurement is a trial's final one: ``StudySpec.measurementSelectionType``
("LAST_MEASUREMENT: Use the last measured objective value"; "BEST_MEASUREMENT: Use the best
measured objective value", aiplatform v1 ``study.proto``), LAST by default.

Automated early stopping: the ``automated_stopping_spec`` oneof of ``StudySpec``
(aiplatform v1 ``study.proto``, the same text as
https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec). Each rule below looks
at a pending trial's curve (its measurements as ``(x, objective)``, ``x`` the step count, or
the elapsed seconds with ``use_elapsed_duration``) and at the trials that completed: trials
that ran to their own end and succeeded. Trials stopped early are not "completed" here:
their curves end short of the steps they would be compared at, and counting the losers would
drag the median down. "Worse" follows the metric's goal (below for MAXIMIZE, above for
MINIMIZE).

- **Median** (``medianAutomatedStoppingSpec``), published: "stops a pending Trial if the
  Trial's best objective_value is strictly below the median 'performance' of all completed
  Trials reported up to the Trial's last measurement. Currently, 'performance' refers to the
  running average of the objective values reported by the Trial in each measurement"
  (study.proto); Golovin et al., "Google Vizier", KDD 2017, §3.2.2: "stops a pending trial
  x_t at step s if the trial's best objective value by step s is strictly worse than the
  median value of the running averages ô_{1:s} of all completed trials' objectives reported
  up to step s". Not published: how many completed trials and measurements it waits for;
  the emulator's are Katib's ``medianstop`` defaults (``min_trials_required`` 3,
  ``start_step`` 4; kubeflow/website ``content/en/docs/components/katib/early-stopping.md``):
  :data:`MEDIAN_MIN_COMPLETED`, :data:`MIN_MEASUREMENTS`.
- **Decay curve** (``decayCurveStoppingSpec``): Vertex "builds a Gaussian Process Regressor
  to predict the final objective value ... Early stopping is requested for the current Trial
  if there is very low probability to exceed the optimal value found so far" (study.proto);
  the regressor is not published. The emulator's rule, **best-case extrapolation**: the
  pending trial's best so far plus the largest gain any completed trial made after the same
  x (from its best by x to its final measurement); when even that is worse than the best
  completed trial's final measurement, the trial stops.
- **Convex** (``convexAutomatedStoppingSpec``): "computes an overestimate of the objective
  value at max_num_steps according to the slope of the incomplete objective value curve. No
  prediction can be made if the curve is completely flat. If the overestimation is worse
  than the best objective value of the completed trials, this pending trial will be
  early-stopped, but a last measurement will be added to the pending trial with
  max_num_steps and predicted objective value from the autoregression model"
  (study.proto, with the fields' own rules: ``min_measurement_count`` default 5,
  ``min_step_count`` default a tenth of ``max_step_count``, ``max_step_count`` learnt from
  the completed trials when unset). The autoregression model is not published. The
  emulator's **tangent overestimate**: the least-squares slope of the last
  ``min_measurement_count`` measurements (never below zero improvement), extended from the
  last measurement to ``max_step_count``, or the best so far when better; that value is
  the measurement added. For a curve of diminishing gains the line lies above the curve,
  so it is an overestimate, as the rule asks.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainpool.runtime.hypertune import MetricRecord

TRIALS_DECIDE_LIMIT = 3
"""``maxFailedTrialCount: 0`` means "Vertex AI decides how many Trials must fail before the
whole job fails" (HyperparameterTuningJob reference,
https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.hyperparameterTuningJobs).
Vertex does not document its choice. The emulator's: while no trial has succeeded,
``min(maxTrialCount, 3)`` failed trials fail the job (a broken trainer stops early instead
of spending the whole budget); once any trial has succeeded, failures never fail it (the
sweep has a result to report; Determined's rule, "an experiment can complete successfully
as long as at least one of the trials within it completes successfully",
https://docs.determined.ai/latest/training/hyperparameter/handle-trial-errors.html)."""

MEDIAN_MIN_COMPLETED = 3
"""Completed trials the median and decay-curve rules wait for (Katib's ``min_trials_required``)."""
MIN_MEASUREMENTS = 4
"""Measurements a pending trial reports before the median or decay-curve rule judges it
(Katib's ``start_step``)."""
CONVEX_MIN_MEASUREMENTS = 5
"""``min_measurement_count`` when unset: "If not defined, the default value is 5"."""

Curve = Sequence[tuple[float, float]]
"""A trial's ``(x, objective)`` in report order; x is the step, or the elapsed seconds."""


def trials_fail_job(failed: int, succeeded: int, max_failed: int, max_trials: int) -> bool:
    """Whether ``failed`` failed trials (``succeeded`` so far) fail a sweep."""
    if max_failed > 0:
        return failed >= max_failed
    return succeeded == 0 and failed >= min(max_trials, TRIALS_DECIDE_LIMIT)


def trials_rule(max_failed: int, max_trials: int) -> str:
    """The rule in words, for the job's error message and log."""
    if max_failed > 0:
        return f"max_failed_trial_count is {max_failed}"
    limit = min(max_trials, TRIALS_DECIDE_LIMIT)
    return (
        f"max_failed_trial_count is 0 (the service decides): {limit} failed trial(s) with "
        "none succeeded fail the job"
    )


def measurement(
    records: list[MetricRecord], metric_id: str, goal: str, selection: str
) -> tuple[float, int] | None:
    """``(value, global_step)`` as the study says: the LAST report (the default), or the BEST."""
    reports = [(r.values[metric_id], r.global_step) for r in records if metric_id in r.values]
    if not reports:
        return None
    if selection == "BEST_MEASUREMENT":
        pick = max if goal == "MAXIMIZE" else min
        return pick(reports, key=lambda report: report[0])
    return reports[-1]


# early stopping


def worse(value: float, than: float, goal: str) -> bool:
    """``value`` strictly worse than ``than`` for the goal."""
    return value < than if goal == "MAXIMIZE" else value > than


def best(values: Sequence[float], goal: str) -> float:
    return max(values) if goal == "MAXIMIZE" else min(values)


@dataclass(frozen=True)
class Completed:
    """A trial that ran to its end: its curve and its final measurement's objective."""

    curve: Curve
    final: float


@dataclass(frozen=True)
class StopDecision:
    """Stop the trial: judged on its measurement at ``at``; ``why`` in words; ``added`` is
    a measurement ``(x, objective)`` the rule adds to the trial (convex), else None."""

    at: float
    why: str
    added: tuple[float, float] | None = None


def _up_to(curve: Curve, x: float) -> list[float]:
    return [value for at, value in curve if at <= x]


def median_rule(
    pending: Curve, completed: Sequence[Completed], goal: str, axis: str = "step"
) -> StopDecision | None:
    """The median rule (module docstring): stop when the pending trial's best by x is
    strictly worse than the median of the completed trials' running averages up to x."""
    if len(pending) < MIN_MEASUREMENTS:
        return None
    x = pending[-1][0]
    mine = best([value for _, value in pending], goal)
    averages = [statistics.fmean(seen) for c in completed if (seen := _up_to(c.curve, x))]
    if len(averages) < MEDIAN_MIN_COMPLETED:
        return None
    median = statistics.median(averages)
    if not worse(mine, median, goal):
        return None
    return StopDecision(
        x,
        f"its best objective {mine:.6g} by {axis} {x:g} is worse than {median:.6g}, the "
        f"median of the running averages of {len(averages)} completed trials up to {axis} {x:g}",
    )


def decay_curve_rule(
    pending: Curve, completed: Sequence[Completed], goal: str, axis: str = "step"
) -> StopDecision | None:
    """Best-case extrapolation (module docstring): even the largest gain a completed trial
    made after x leaves the pending trial worse than the best completed trial."""
    if len(pending) < MIN_MEASUREMENTS or not completed:
        return None
    x = pending[-1][0]
    sign = 1.0 if goal == "MAXIMIZE" else -1.0
    gains = [
        sign * (c.final - best(seen, goal))
        for c in completed
        if (seen := _up_to(c.curve, x)) and c.curve[-1][0] > x
    ]
    if len(gains) < MEDIAN_MIN_COMPLETED:
        return None
    gain = max(0.0, max(gains))
    predicted = best([value for _, value in pending], goal) + sign * gain
    target = best([c.final for c in completed], goal)
    if not worse(predicted, target, goal):
        return None
    return StopDecision(
        x,
        f"its best so far plus the largest gain any of {len(gains)} completed trials made "
        f"after {axis} {x:g} ({gain:.6g}) is {predicted:.6g}, worse than the best completed "
        f"trial's {target:.6g}",
    )


@dataclass(frozen=True)
class ConvexSpec:
    """``ConvexAutomatedStoppingSpec``'s numbers (0: unset)."""

    max_step_count: float = 0
    min_step_count: float = 0
    min_measurement_count: int = 0


def _slope(points: Curve) -> float:
    """Least-squares slope of ``points`` (0 when every x is the same)."""
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if spread == 0:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def convex_rule(
    pending: Curve, completed: Sequence[Completed], goal: str, spec: ConvexSpec, axis: str = "step"
) -> StopDecision | None:
    """The tangent overestimate (module docstring) against the best completed trial."""
    count = spec.min_measurement_count or CONVEX_MIN_MEASUREMENTS
    if len(completed) < count + 1 or len(pending) < count:
        return None
    max_x = spec.max_step_count or max(c.curve[-1][0] for c in completed if c.curve)
    min_x = spec.min_step_count or max_x / 10
    values = [value for _, value in pending]
    if not any(x > min_x for x, _ in pending) or len(set(values)) == 1:
        return None  # too early, or "no prediction can be made if the curve is completely flat"
    sign = 1.0 if goal == "MAXIMIZE" else -1.0
    x, last = pending[-1]
    gain = max(0.0, sign * _slope(pending[-count:]))
    tangent = last + sign * gain * max(0.0, max_x - x)
    overestimate = best([tangent, *values], goal)
    target = best([c.final for c in completed], goal)
    if not worse(overestimate, target, goal):
        return None
    return StopDecision(
        x,
        f"its overestimate at {axis} {max_x:g} ({overestimate:.6g}, from the slope of its "
        f"last {count} measurements) is worse than the best completed trial's {target:.6g}",
        added=(max_x, overestimate),
    )


RULE_FIELDS = {
    "medianAutomatedStoppingSpec": "median",
    "decayCurveStoppingSpec": "decay curve",
    "convexAutomatedStoppingSpec": "convex",
}
"""The ``automated_stopping_spec`` oneof's REST fields and the rule each names."""
RULE_NAMES = {
    "median": "the median rule (Vizier paper §3.2.2)",
    "decay curve": "the emulator's best-case extrapolation (Vertex's Gaussian process "
    "regressor is not published)",
    "convex": "the emulator's tangent overestimate (Vertex's autoregression model is not "
    "published)",
}


@dataclass(frozen=True)
class StoppingRule:
    """The study's automated stopping rule: ``kind`` is a value of :data:`RULE_FIELDS`."""

    kind: str
    field: str
    use_elapsed_duration: bool = False
    convex: ConvexSpec = ConvexSpec()

    @property
    def axis(self) -> str:
        return "elapsed seconds" if self.use_elapsed_duration else "step"

    def describe(self) -> str:
        return f"{self.field}: {RULE_NAMES[self.kind]}, on the {self.axis} axis"

    def check(
        self, pending: Curve, completed: Sequence[Completed], goal: str
    ) -> StopDecision | None:
        """Whether the pending trial stops now."""
        if self.kind == "median":
            return median_rule(pending, completed, goal, self.axis)
        if self.kind == "decay curve":
            return decay_curve_rule(pending, completed, goal, self.axis)
        return convex_rule(pending, completed, goal, self.convex, self.axis)


def _int(value: Any) -> int:
    return int(float(value or 0))  # int64 arrives as a string in REST JSON


def stopping_rule(study: dict[str, Any]) -> StoppingRule | None:
    """The rule a ``StudySpec`` (REST JSON) asks for; None without ``automated_stopping_spec``."""
    for field, kind in RULE_FIELDS.items():
        spec = study.get(field)
        if isinstance(spec, dict):
            convex = ConvexSpec(
                max_step_count=_int(spec.get("maxStepCount")),
                min_step_count=_int(spec.get("minStepCount")),
                min_measurement_count=_int(spec.get("minMeasurementCount")),
            )
            return StoppingRule(kind, field, bool(spec.get("useElapsedDuration")), convex)
    return None
