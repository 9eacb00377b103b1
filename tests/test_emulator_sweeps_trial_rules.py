"""The automated stopping rules of ``trainpool.emulator.sweeps.trial_rules``, one by one.

Median: "stops a pending Trial if the Trial's best objective_value is strictly below the
median 'performance' of all completed Trials reported up to the Trial's last measurement.
Currently, 'performance' refers to the running average of the objective values reported by
the Trial in each measurement" (``MedianAutomatedStoppingSpec``, aiplatform v1 study.proto).
Convex: the field rules of ``ConvexAutomatedStoppingSpec`` (same proto). Decay curve: the
emulator's best-case extrapolation (Vertex's regressor is not published).
"""

from __future__ import annotations

import pytest

from trainpool.emulator.sweeps.trial_rules import (
    Completed,
    ConvexSpec,
    StoppingRule,
    convex_rule,
    decay_curve_rule,
    median_rule,
    stopping_rule,
)


def curve(*values: float, start: int = 1) -> list[tuple[float, float]]:
    return [(float(start + i), v) for i, v in enumerate(values)]


def done(*values: float, final: float | None = None) -> Completed:
    return Completed(curve(*values), values[-1] if final is None else final)


# running averages up to step 4: 2.5, 3.0, 5.0 -> median 3.0
COMPLETED = [done(1, 2, 3, 4, 5, 6), done(3, 3, 3, 3, 9, 9), done(5, 5, 5, 5, 5, 5)]


def test_median_stops_a_trial_whose_best_is_strictly_below_the_median_running_average() -> None:
    decision = median_rule(curve(1, 2.9, 2, 1), COMPLETED, "MAXIMIZE")
    assert decision is not None
    assert decision.at == 4
    assert decision.added is None
    assert "its best objective 2.9 by step 4" in decision.why
    assert "3, the median of the running averages of 3 completed trials up to step 4" in (
        decision.why
    )


def test_median_is_strict_and_uses_the_best_not_the_last_value() -> None:
    assert median_rule(curve(1, 3.0, 2, 1), COMPLETED, "MAXIMIZE") is None  # equal: kept
    assert median_rule(curve(9, 0, 0, 0), COMPLETED, "MAXIMIZE") is None  # best 9 by step 4


def test_median_compares_only_what_completed_trials_reported_up_to_the_same_step() -> None:
    # at step 4 the second trial's 9s (steps 5, 6) do not count; at step 6 they do:
    # averages up to 6: 3.5, 5.0, 5.0 -> median 5.0
    assert median_rule(curve(1, 1, 1, 4.5), COMPLETED, "MAXIMIZE") is None
    assert median_rule(curve(1, 1, 1, 1, 1, 4.5), COMPLETED, "MAXIMIZE") is not None
    late = Completed([(10.0, 100.0)], 100.0)  # nothing reported by step 4: left out
    assert median_rule(curve(1, 1, 1, 3.5), [*COMPLETED, late], "MAXIMIZE") is None


def test_median_minimize_stops_a_trial_strictly_above_the_median() -> None:
    assert median_rule(curve(4, 3.5, 3.1, 4), COMPLETED, "MINIMIZE") is not None
    assert median_rule(curve(4, 3.5, 3.0, 4), COMPLETED, "MINIMIZE") is None


def test_median_waits_for_three_completed_trials_and_four_measurements() -> None:
    assert median_rule(curve(0, 0, 0), COMPLETED, "MAXIMIZE") is None
    assert median_rule(curve(0, 0, 0, 0), COMPLETED[:2], "MAXIMIZE") is None
    assert median_rule(curve(0, 0, 0, 0), COMPLETED, "MAXIMIZE") is not None


def test_decay_curve_stops_when_even_the_largest_later_gain_falls_short_of_the_best() -> None:
    completed = [done(1, 2, 3, 4, 5, 10), done(2, 2, 2, 2, 2, 3), done(1, 1, 1, 1, 1, 1)]
    # best completed final 10; gains after step 4: 10-4=6, 3-2=1, 0 -> largest 6
    decision = decay_curve_rule(curve(1, 2, 3, 3.9), completed, "MAXIMIZE")
    assert decision is not None and "(6) is 9.9, worse than the best completed trial's 10" in (
        decision.why
    )
    assert decay_curve_rule(curve(1, 2, 3, 4), completed, "MAXIMIZE") is None  # 4 + 6 = 10


def test_decay_curve_minimize_and_its_needs() -> None:
    completed = [done(9, 8, 7, 6, 5, 1), done(9, 9, 9, 9, 9, 8), done(9, 9, 9, 9, 9, 9)]
    assert decay_curve_rule(curve(9, 9, 9, 6.1), completed, "MINIMIZE") is not None
    assert decay_curve_rule(curve(9, 9, 9, 6.0), completed, "MINIMIZE") is None
    assert decay_curve_rule(curve(9, 9, 9), completed, "MINIMIZE") is None  # 3 measurements
    # trials that ended by the pending trial's step say nothing about later gains
    short = [done(9, 8, 7), done(9, 8, 7), done(9, 8, 7)]
    assert decay_curve_rule(curve(99, 99, 99, 99), short, "MINIMIZE") is None


CONVEX_DONE = [done(*(s / 10 for s in range(1, 11))) for _ in range(3)]  # best final 1.0


def test_convex_stops_on_its_tangent_overestimate_and_adds_it_as_a_measurement() -> None:
    spec = ConvexSpec(max_step_count=10, min_measurement_count=2)
    # slope of the last 2 measurements 0.05 per step: 0.3 + 0.05 * (10 - 4) = 0.6 < 1.0
    decision = convex_rule(curve(0.1, 0.2, 0.25, 0.3), CONVEX_DONE, "MAXIMIZE", spec)
    assert decision is not None
    assert decision.at == 4
    assert decision.added == (10, pytest.approx(0.6))
    # slope 0.2: 0.8 + 0.2 * 6 = 2.0 could still beat 1.0
    assert convex_rule(curve(0.1, 0.2, 0.6, 0.8), CONVEX_DONE, "MAXIMIZE", spec) is None


def test_convex_minimize_uses_the_best_so_far_when_the_curve_worsens() -> None:
    spec = ConvexSpec(max_step_count=10, min_measurement_count=2)
    completed = [done(5, 4, 3, 2, 1) for _ in range(3)]  # best final 1
    decision = convex_rule(curve(5, 3, 4, 4.5), completed, "MINIMIZE", spec)
    assert decision is not None and decision.added == (10, 3)  # its best so far


def test_convex_needs_completed_trials_measurements_steps_and_a_slope() -> None:
    spec = ConvexSpec(max_step_count=10, min_measurement_count=2)
    low = curve(0.1, 0.1, 0.1, 0.2)
    assert convex_rule(low, CONVEX_DONE[:2], "MAXIMIZE", spec) is None  # needs 2 + 1 completed
    assert convex_rule(low[:1], CONVEX_DONE, "MAXIMIZE", spec) is None  # needs 2 measurements
    assert convex_rule(curve(0.1, 0.1, 0.1), CONVEX_DONE, "MAXIMIZE", spec) is None  # flat
    early = ConvexSpec(max_step_count=10, min_step_count=4, min_measurement_count=2)
    assert convex_rule(low, CONVEX_DONE, "MAXIMIZE", early) is None  # no step > 4 yet
    assert convex_rule([*low, (5.0, 0.2)], CONVEX_DONE, "MAXIMIZE", early) is not None


def test_convex_defaults_five_measurements_and_a_learnt_max_step() -> None:
    completed = CONVEX_DONE * 2  # 6 = 5 + 1 completed trials, 10 steps each
    assert convex_rule(curve(0.1, 0.1, 0.1, 0.2), completed, "MAXIMIZE", ConvexSpec()) is None
    decision = convex_rule(curve(0.1, 0.1, 0.1, 0.1, 0.2), completed, "MAXIMIZE", ConvexSpec())
    assert decision is not None and decision.added is not None
    assert decision.added[0] == 10  # max_step_count learnt: the completed trials' last step


def test_stopping_rule_reads_the_oneof_from_rest_json() -> None:
    assert stopping_rule({"metrics": []}) is None
    assert stopping_rule({"medianAutomatedStoppingSpec": {}}) == StoppingRule(
        "median", "medianAutomatedStoppingSpec"
    )
    decay = stopping_rule({"decayCurveStoppingSpec": {"useElapsedDuration": True}})
    assert decay is not None and decay.kind == "decay curve" and decay.axis == "elapsed seconds"
    convex = stopping_rule(
        {"convexAutomatedStoppingSpec": {"maxStepCount": "20", "minMeasurementCount": "3"}}
    )
    assert convex is not None
    assert convex.convex == ConvexSpec(max_step_count=20, min_measurement_count=3)
    assert "tangent overestimate" in convex.describe()
