"""A Vizier study's decisions made from its stored trials (trainpool.emulator.sweeps.studies):
the sweep's algorithms told every stored trial, the same answer after a restart, the grid
never repeated, the final measurement selected, the stopping rules, the optimal trials."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from google.cloud.aiplatform_v1.types import study as study_types

from trainpool.emulator.sweeps import studies

Trial = study_types.Trial
Measurement = study_types.Measurement
State = Trial.State
SPEC: dict[str, Any] = {
    "metrics": [{"metricId": "acc", "goal": "MAXIMIZE"}],
    "parameters": [
        {
            "parameterId": "lr",
            "doubleValueSpec": {"minValue": 0.001, "maxValue": 1.0},
            "scaleType": "UNIT_REVERSE_LOG_SCALE",
        },
        {"parameterId": "n", "integerValueSpec": {"minValue": 1, "maxValue": 8}},
        {"parameterId": "opt", "categoricalValueSpec": {"values": ["adam", "sgd"]}},
    ],
}


def measured(step: float, **metrics: float) -> Any:
    return Measurement(
        step_count=int(step),
        elapsed_duration=timedelta(seconds=step * 10),
        metrics=[Measurement.Metric(metric_id=k, value=v) for k, v in metrics.items()],
    )


def trial(number: int, params: dict[str, Any], state: Any = State.ACTIVE, **kw: Any) -> Any:
    return Trial(
        name=f"projects/p/locations/us-central1/studies/1/trials/{number}",
        id=str(number),
        state=state,
        parameters=[Trial.Parameter(parameter_id=k, value=v) for k, v in params.items()],
        **kw,
    )


def test_suggestions_are_in_range_and_the_same_after_a_restart() -> None:
    stored: list[Any] = []
    for number in range(1, 13):  # past TPE's random start-up trials
        (params,) = studies.suggest(SPEC, "study-a", stored, 1)
        assert 0.001 <= params["lr"] <= 1.0 and params["n"] in range(1, 9)
        assert params["opt"] in ("adam", "sgd")
        final = measured(1, acc=params["n"] / 8)
        stored.append(trial(number, params, State.SUCCEEDED, final_measurement=final))
    again = studies.suggest(SPEC, "study-a", stored, 3)
    assert again == studies.suggest(SPEC, "study-a", stored, 3), "decided from the records alone"
    assert len({str(p) for p in again}) == 3


def test_tpe_is_told_the_stored_trials() -> None:
    """Told that larger n scores better, TPE's suggestions lean to large n."""
    stored = []
    for number in range(1, 31):
        n = (number % 8) + 1
        final = measured(1, acc=float(n))
        stored.append(
            trial(
                number, {"lr": 0.1, "n": n, "opt": "sgd"}, State.SUCCEEDED, final_measurement=final
            )
        )
    picks = studies.suggest(SPEC, "study-b", stored, 10)
    assert sum(p["n"] for p in picks) / len(picks) > 5


def test_the_grid_skips_points_the_study_holds_and_then_ends() -> None:
    spec = {
        "metrics": [{"metricId": "acc", "goal": "MAXIMIZE"}],
        "parameters": [{"parameterId": "n", "integerValueSpec": {"minValue": 1, "maxValue": 3}}],
        "algorithm": "GRID_SEARCH",
    }
    held = [trial(1, {"n": 2.0})]  # a value read back from a proto Value is a float
    assert studies.suggest(spec, "grid", held, 5) == [{"n": 1}, {"n": 3}]


def test_the_final_measurement_is_the_last_or_the_best() -> None:
    pending = trial(
        1, {"n": 1}, measurements=[measured(1, acc=0.9), measured(2, acc=0.0), measured(3, loss=1)]
    )
    assert studies.final_measurement(SPEC, pending).step_count == 2, "the last with the metric"
    best = {**SPEC, "measurementSelectionType": "BEST_MEASUREMENT"}
    assert studies.final_measurement(best, pending).step_count == 1
    assert studies.final_measurement(SPEC, trial(2, {"n": 1})) is None


def test_the_stopping_rules_on_steps_and_on_elapsed_time() -> None:
    curves = [[0.1, 0.5, 0.7, 0.8, 0.9]] * 3
    completed = [
        trial(
            i + 1,
            {"n": 1},
            State.SUCCEEDED,
            measurements=[measured(step + 1, acc=v) for step, v in enumerate(curve)],
            final_measurement=measured(5, acc=curve[-1]),
        )
        for i, curve in enumerate(curves)
    ]
    bad = trial(9, {"n": 1}, measurements=[measured(s, acc=0.01) for s in range(1, 5)])
    assert studies.should_stop(SPEC, bad, completed) is None, "no rule, no stop"
    median = {**SPEC, "medianAutomatedStoppingSpec": {}}
    decision = studies.should_stop(median, bad, [*completed, bad])
    assert decision is not None and decision.at == 4
    elapsed = {**SPEC, "medianAutomatedStoppingSpec": {"useElapsedDuration": True}}
    decision = studies.should_stop(elapsed, bad, completed)
    assert decision is not None and decision.at == 40, "x is the elapsed seconds"
    stopped = {completed[0].name}  # stopped early, then completed: not compared against
    assert studies.should_stop(median, bad, completed, stopped) is None, "2 completed of 3"
    good = trial(10, {"n": 1}, measurements=[measured(s, acc=0.95) for s in range(1, 5)])
    assert studies.should_stop(median, good, completed) is None


def test_optimal_is_the_best_trial_or_the_pareto_front() -> None:
    spec = {
        "metrics": [
            {"metricId": "acc", "goal": "MAXIMIZE"},
            {"metricId": "cost", "goal": "MINIMIZE"},
        ],
        "parameters": SPEC["parameters"],
    }
    done = [
        trial(1, {"n": 1}, State.SUCCEEDED, final_measurement=measured(1, acc=0.9, cost=5)),
        trial(2, {"n": 2}, State.SUCCEEDED, final_measurement=measured(1, acc=0.8, cost=1)),
        trial(3, {"n": 3}, State.SUCCEEDED, final_measurement=measured(1, acc=0.7, cost=6)),
        trial(4, {"n": 4}, State.SUCCEEDED, final_measurement=measured(1, acc=0.9, cost=5)),
        trial(5, {"n": 5}, State.INFEASIBLE),
        trial(6, {"n": 6}, State.ACTIVE, measurements=[measured(1, acc=1.0, cost=0)]),
    ]
    assert [t.id for t in studies.optimal(SPEC, done)] == ["1"], "one trial, the first of equals"
    assert [t.id for t in studies.optimal(spec, done)] == ["1", "2", "4"], "equals both stay"
    minimize = {**SPEC, "metrics": [{"metricId": "acc", "goal": "MINIMIZE"}]}
    assert [t.id for t in studies.optimal(minimize, done)] == ["3"]
    assert studies.optimal(SPEC, done[4:]) == []
