"""Trial rows and the best trial choice, from a tuning job's REST JSON; the tuning job a
sweep task builds (its study's early stopping)."""

from __future__ import annotations

from typing import Any

import pytest

from trainpool.errors import InputError
from trainpool.spec.trials import best_trial, trial_rows
from trainpool.vertex.launch import Options
from trainpool.vertex.sweep import tuning_job

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


SPEC = {
    "workerPoolSpecs": [
        {
            "machineSpec": {"machineType": "n1-standard-4"},
            "replicaCount": 1,
            "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/trainer:1"},
        }
    ]
}
STUDY = {
    "metrics": {"acc": "maximize"},
    "parameters": {"lr": {"type": "double", "min": 0.001, "max": 0.1}},
    "early_stopping": {"median": {}},
}


def sweep_job(study: dict[str, Any], early_stopping: Any = None) -> dict[str, Any]:
    return tuning_job(
        "s",
        SPEC,
        study,
        max_trial_count=4,
        parallel_trial_count=2,
        max_failed_trial_count=0,
        options=Options(),
        user_labels={},
        task_id="",
        early_stopping=early_stopping,
        log=lambda _: None,
    )


def test_the_study_s_early_stopping_reaches_the_tuning_job_unchanged() -> None:
    assert sweep_job(STUDY)["studySpec"]["medianAutomatedStoppingSpec"] == {}
    rest = sweep_job(STUDY)["studySpec"]
    assert sweep_job(rest)["studySpec"] == rest  # a REST study passes through as it is


def test_the_early_stopping_argument_replaces_the_study_s_and_empty_keeps_it() -> None:
    # KFP hands a dict parameter over as a Struct: whole numbers arrive as floats
    study = sweep_job(STUDY, {"convex": {"max_step_count": 20.0}})["studySpec"]
    assert study["convexAutomatedStoppingSpec"] == {"maxStepCount": 20}
    assert "medianAutomatedStoppingSpec" not in study
    assert "medianAutomatedStoppingSpec" in sweep_job(STUDY, {})["studySpec"]
    assert not any("Stopping" in key for key in sweep_job(STUDY, {"none": {}})["studySpec"])


def test_a_bad_early_stopping_is_refused_naming_the_field() -> None:
    with pytest.raises(InputError) as err:
        sweep_job(STUDY, {"convex": {"min_step_count": 5, "max_step_count": 5}})
    assert str(err.value) == (
        "studySpec.convexAutomatedStoppingSpec.minStepCount: 5 >= maxStepCount 5; accepted: less"
    )
    with pytest.raises(InputError) as err:
        sweep_job(STUDY, {"patience": {}})
    assert str(err.value).startswith("early_stopping: 'patience' is not a rule; accepted:")
