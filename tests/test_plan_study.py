"""validate_study: the rules of a Vertex study, on REST JSON and on proto-derived dicts."""

from __future__ import annotations

import json

import pytest
from google.cloud.aiplatform_v1.types import StudySpec

from trainpool.plan.study_rules import PlanError, validate_study
from trainpool.spec import to_rest

LR = {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1}}
BATCH = {"parameterId": "batch", "discreteValueSpec": {"values": [32, 64, 128]}}
OPT = {"parameterId": "opt", "categoricalValueSpec": {"values": ["adam", "sgd"]}}
LAYERS = {"parameterId": "layers", "integerValueSpec": {"minValue": 1, "maxValue": 3}}
METRIC = {"metricId": "accuracy", "goal": "MAXIMIZE"}


def spec(*parameters: dict, algorithm: str = "RANDOM_SEARCH", **extra: object) -> dict:
    return {"metrics": [METRIC], "parameters": list(parameters), "algorithm": algorithm, **extra}


def problems(study: dict, max_trials: int = 6, parallel: int = 2, max_failed: int = 0) -> list[str]:
    with pytest.raises(PlanError) as err:
        validate_study(
            study,
            max_trial_count=max_trials,
            parallel_trial_count=parallel,
            max_failed_trial_count=max_failed,
        )
    return [str(p) for p in err.value.problems]


def test_a_valid_grid_passes_and_warns_when_trials_exceed_the_grid() -> None:
    study = spec(BATCH, OPT, LAYERS, algorithm="GRID_SEARCH")
    assert validate_study(study, max_trial_count=20, parallel_trial_count=2) == [
        "maxTrialCount 20 exceeds the 18 points of the grid"
    ]


def test_a_proto_derived_spec_with_enum_numbers_and_int64_strings_passes() -> None:
    proto = StudySpec.from_json(json.dumps(spec(LR, LAYERS, BATCH, OPT)))
    as_rest = to_rest(StudySpec.to_dict(proto))
    assert (
        as_rest["algorithm"] == 3
        and as_rest["parameters"][1]["integerValueSpec"]["minValue"] == "1"
    )
    assert validate_study(as_rest, max_trial_count=4, parallel_trial_count=2) == []


def test_grid_refuses_a_double_parameter() -> None:
    assert problems(spec(LR, BATCH, algorithm="GRID_SEARCH")) == [
        "studySpec.algorithm: GRID_SEARCH with DOUBLE parameters ['lr']; accepted: "
        "INTEGER, DISCRETE or CATEGORICAL parameters only (or RANDOM_SEARCH)"
    ]


def test_log_scale_needs_a_positive_range() -> None:
    lr = {**LR, "doubleValueSpec": {"minValue": 0, "maxValue": 1}, "scaleType": "UNIT_LOG_SCALE"}
    assert problems(spec(lr)) == [
        "studySpec.parameters[lr].doubleValueSpec.minValue: 0.0 with UNIT_LOG_SCALE; "
        "accepted: > 0 (log needs a positive range)"
    ]


def test_discrete_values_must_increase() -> None:
    batch = {"parameterId": "batch", "discreteValueSpec": {"values": [64, 32]}}
    assert problems(spec(batch)) == [
        "studySpec.parameters[batch].discreteValueSpec.values: [64, 32]; "
        "accepted: increasing, at least 1e-10 apart"
    ]


def test_parallel_must_not_exceed_max_and_failed_must_fit() -> None:
    assert problems(spec(LR), max_trials=2, parallel=3, max_failed=5) == [
        "parallelTrialCount: 3; accepted: 1 to maxTrialCount (2)",
        "maxFailedTrialCount: 5; accepted: 0 to maxTrialCount (2)",
    ]


def test_metric_ids_must_be_non_empty_and_distinct_and_goals_known() -> None:
    study = spec(LR)
    study["metrics"] = [{"metricId": "", "goal": "MAXIMIZE"}, {"metricId": "a", "goal": "UP"}]
    study["metrics"].append({"metricId": "a", "goal": "MINIMIZE"})
    assert problems(study) == [
        "studySpec.metrics[0].metricId: ''; accepted: a non-empty string",
        "studySpec.metrics[1].goal: 'UP' is not accepted; accepted: MAXIMIZE, MINIMIZE",
        "studySpec.metrics: ['a'] given more than once; accepted: distinct ids",
    ]


def test_range_categorical_and_value_spec_count_rules() -> None:
    backwards = {"parameterId": "x", "doubleValueSpec": {"minValue": 2, "maxValue": 1}}
    scaled = {**OPT, "scaleType": "UNIT_LINEAR_SCALE"}
    both = {"parameterId": "y", **LR, **BATCH}
    both["parameterId"] = "y"
    assert problems(spec(backwards, scaled, both)) == [
        "studySpec.parameters[x].doubleValueSpec: minValue 2.0 >= maxValue 1.0; "
        "accepted: min < max",
        "studySpec.parameters[opt].categoricalValueSpec.scaleType: UNIT_LINEAR_SCALE; "
        "accepted: unset for CATEGORICAL",
        "studySpec.parameters[y]: value specs ['doubleValueSpec', 'discreteValueSpec']; "
        "accepted: exactly one of doubleValueSpec, integerValueSpec, discreteValueSpec, "
        "categoricalValueSpec",
    ]


def test_no_metrics_no_parameters_and_an_unknown_algorithm() -> None:
    assert problems({"metrics": [], "parameters": [], "algorithm": "VIZIER"}) == [
        "studySpec.metrics: []; accepted: a non-empty list",
        "studySpec.parameters: []; accepted: a non-empty list",
        "studySpec.algorithm: 'VIZIER' is not accepted; "
        "accepted: ALGORITHM_UNSPECIFIED, GRID_SEARCH, RANDOM_SEARCH",
    ]
