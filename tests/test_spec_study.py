"""The readable study dict to and from Vertex StudySpec REST JSON."""

from __future__ import annotations

import json

import pytest
from google.cloud.aiplatform_v1.types import StudySpec

from trainpool.spec import to_rest
from trainpool.spec.study import StudyError, from_study_spec, to_study_spec

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
            "study.goal: unknown key; accepted: metrics, parameters, algorithm, measurement",
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
