"""The readable study dict to and from Vertex StudySpec REST JSON."""

from __future__ import annotations

import json

import pytest
from google.cloud.aiplatform_v1.types import StudySpec

from trainpool.spec import to_rest
from trainpool.spec.study import StudyError, from_study_spec, to_study_spec, with_early_stopping

READABLE = {
    "metrics": {"accuracy": "maximize"},
    "parameters": {
        "lr": {"type": "double", "min": 1e-4, "max": 0.1, "scale": "log"},
        "layers": {"type": "integer", "min": 1, "max": 4},
        "batch_size": {"type": "discrete", "values": [32, 64, 128]},
        "optimizer": {"type": "categorical", "values": ["adam", "sgd"]},
    },
    "algorithm": "random",
    "measurement": "last",
}
REST = {
    "metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
    "parameters": [
        {
            "parameterId": "lr",
            "doubleValueSpec": {"minValue": 0.0001, "maxValue": 0.1},
            "scaleType": "UNIT_LOG_SCALE",
        },
        {"parameterId": "layers", "integerValueSpec": {"minValue": 1, "maxValue": 4}},
        {"parameterId": "batch_size", "discreteValueSpec": {"values": [32, 64, 128]}},
        {"parameterId": "optimizer", "categoricalValueSpec": {"values": ["adam", "sgd"]}},
    ],
    "algorithm": "RANDOM_SEARCH",
    "measurementSelectionType": "LAST_MEASUREMENT",
}


def test_readable_study_renders_to_the_whole_rest_spec() -> None:
    assert to_study_spec(READABLE) == REST


def test_rest_spec_reads_back_to_the_readable_study() -> None:
    assert from_study_spec(REST) == READABLE


def test_rendered_spec_is_accepted_by_the_real_proto_and_reads_back_from_it() -> None:
    proto = StudySpec.from_json(json.dumps(REST))
    as_dict = StudySpec.to_dict(proto)  # snake_case, enums as numbers, int64 as strings
    assert from_study_spec(to_rest(as_dict)) == READABLE


def test_algorithm_defaults_to_bayesian_and_measurement_is_left_unset() -> None:
    study = {
        "metrics": {"loss": "minimize"},
        "parameters": {"x": {"type": "integer", "min": 1, "max": 3}},
    }
    assert to_study_spec(study) == {
        "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
        "parameters": [{"parameterId": "x", "integerValueSpec": {"minValue": 1, "maxValue": 3}}],
        "algorithm": "ALGORITHM_UNSPECIFIED",
    }


@pytest.mark.parametrize(
    ("study", "problem"),
    [
        (
            {**READABLE, "metrics": {"accuracy": "biggest"}},
            "study.metrics.accuracy: 'biggest' is not accepted; accepted: maximize, minimize",
        ),
        (
            {**READABLE, "parameters": {"lr": {"type": "float", "min": 0, "max": 1}}},
            "study.parameters.lr.type: 'float' is not accepted; "
            "accepted: double, integer, discrete, categorical",
        ),
        (
            {**READABLE, "parameters": {"lr": {"type": "double", "min": 0.1}}},
            "study.parameters.lr: double needs max; accepted: numbers",
        ),
        (
            {
                **READABLE,
                "parameters": {"o": {"type": "categorical", "values": ["a"], "scale": "log"}},
            },
            "study.parameters.o.scale: unknown key; accepted: type, values",
        ),
        (
            {**READABLE, "algorithm": "vizier"},
            "study.algorithm: 'vizier' is not accepted; accepted: bayesian, grid, random",
        ),
        (
            {**READABLE, "goal": "max"},
            "study.goal: unknown key; accepted: metrics, parameters, algorithm, measurement, "
            "early_stopping",
        ),
        (
            {**READABLE, "metrics": {}},
            "study.metrics: {}; accepted: {metric_id: 'maximize'|'minimize'}",
        ),
    ],
)
def test_malformed_study_names_field_value_and_accepted(study: dict, problem: str) -> None:
    with pytest.raises(StudyError) as err:
        to_study_spec(study)
    assert [str(p) for p in err.value.problems] == [problem]


CONVEX = {
    "max_step_count": 20,
    "min_step_count": 2,
    "min_measurement_count": 3,
    "learning_rate_parameter_name": "lr",
    "use_elapsed_duration": False,
    "update_all_stopped_trials": True,
}


@pytest.mark.parametrize(
    ("early_stopping", "rest"),
    [
        ({"median": {}}, {"medianAutomatedStoppingSpec": {}}),
        (
            {"median": {"use_elapsed_duration": True}},
            {"medianAutomatedStoppingSpec": {"useElapsedDuration": True}},
        ),
        ({"decay_curve": {}}, {"decayCurveStoppingSpec": {}}),
        (
            {"convex": CONVEX},
            {
                "convexAutomatedStoppingSpec": {
                    "maxStepCount": 20,
                    "minStepCount": 2,
                    "minMeasurementCount": 3,
                    "learningRateParameterName": "lr",
                    "useElapsedDuration": False,
                    "updateAllStoppedTrials": True,
                }
            },
        ),
    ],
)
def test_early_stopping_maps_to_the_rest_oneof_and_round_trips_through_the_proto(
    early_stopping: dict, rest: dict
) -> None:
    readable = {**READABLE, "early_stopping": early_stopping}
    assert to_study_spec(readable) == {**REST, **rest}
    (rule,) = early_stopping
    set_fields = {rule: {k: v for k, v in early_stopping[rule].items() if v}}  # no defaults
    assert from_study_spec(to_study_spec(readable)) == {**READABLE, "early_stopping": set_fields}
    proto = StudySpec.from_json(json.dumps(to_study_spec(readable)))  # the real field names
    as_dict = StudySpec.to_dict(proto)  # snake_case, int64 as strings, defaults printed
    assert from_study_spec(to_rest(as_dict))["early_stopping"] == set_fields


def test_early_stopping_by_name_alone_and_none() -> None:
    assert to_study_spec({**READABLE, "early_stopping": "decay_curve"}) == {
        **REST,
        "decayCurveStoppingSpec": {},
    }
    assert to_study_spec({**READABLE, "early_stopping": "none"}) == REST
    assert to_study_spec({**READABLE, "early_stopping": {"none": {}}}) == REST


def test_with_early_stopping_replaces_the_rest_oneof() -> None:
    rest = {**REST, "medianAutomatedStoppingSpec": {}}
    assert with_early_stopping(rest, {"convex": {"max_step_count": 10.0}}) == {
        **REST,
        "convexAutomatedStoppingSpec": {"maxStepCount": 10},  # KFP's float made whole again
    }
    assert with_early_stopping(rest, "none") == REST


@pytest.mark.parametrize(
    ("early_stopping", "problem"),
    [
        (
            {"median": {}, "convex": {}},
            "study.early_stopping: {'median': {}, 'convex': {}}; accepted: exactly one "
            "{rule: {...}} or a rule's name; rules: median, decay_curve, convex, none",
        ),
        (
            {"hyperband": {}},
            "study.early_stopping: 'hyperband' is not a rule; accepted: {rule: {...}} or a "
            "rule's name; rules: median, decay_curve, convex, none",
        ),
        (
            {"median": {"min_step_count": 3}},
            "study.early_stopping.median.min_step_count: unknown key; "
            "accepted: use_elapsed_duration",
        ),
        (
            {"convex": {"max_step_count": "many"}},
            "study.early_stopping.convex.max_step_count: 'many'; accepted: a whole number",
        ),
        (
            {"decay_curve": {"use_elapsed_duration": "yes"}},
            "study.early_stopping.decay_curve.use_elapsed_duration: 'yes'; accepted: true or false",
        ),
    ],
)
def test_malformed_early_stopping_names_the_field(early_stopping: object, problem: str) -> None:
    with pytest.raises(StudyError) as err:
        to_study_spec({**READABLE, "early_stopping": early_stopping})
    assert [str(p) for p in err.value.problems] == [problem]
