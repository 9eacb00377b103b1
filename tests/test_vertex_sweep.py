"""Trial rows and the best trial choice, from a tuning job's REST JSON."""

from __future__ import annotations

from typing import Any

from trainpool.spec.trials import best_trial, trial_rows

JOB: dict[str, Any] = {
    "trials": [
        {
            "id": str(i),
            "state": "SUCCEEDED",
            "parameters": [{"parameterId": "lr", "value": lr}],
            "finalMeasurement": {"metrics": [{"metricId": "acc", "value": acc}]},
        }
        for i, lr, acc in [(1, 0.1, 0.7), (2, 0.01, 0.9), (3, 0.001, 0.9)]
    ]
    + [{"id": "4", "state": "INFEASIBLE", "parameters": [{"parameterId": "lr", "value": 1.0}]}]
}


def test_trial_rows_are_flat_and_readable() -> None:
    assert trial_rows(JOB)[1] == {
        "id": "2",
        "state": "SUCCEEDED",
        "parameters": {"lr": 0.01},
        "metrics": {"acc": 0.9},
        "custom_job": "",
        "infeasible_reason": "",
    }


def test_best_follows_the_goal_and_ties_go_to_the_lowest_trial_id() -> None:
    rows = trial_rows(JOB)
    assert best_trial(rows, "acc", "MAXIMIZE")["id"] == "2"
    assert best_trial(rows, "acc", "MINIMIZE")["id"] == "1"
    assert best_trial(rows, "loss", "MINIMIZE") is None
