"""The study's early stopping and the fields tuning jobs do not support (plan.study_fields).

``observationNoise`` and every value spec's ``defaultValue``: "Currently only supported by
the Vertex AI Vizier service. Not supported by HyperparameterTuningJob or TrainingPipeline"
(aiplatform v1 study.proto). ``automated_stopping_spec`` is a oneof (same proto).
"""

from __future__ import annotations

import json

import pytest
from google.cloud.aiplatform_v1.types import StudySpec

from trainpool.plan.study_rules import PlanError, validate_study
from trainpool.spec import to_rest

LR = {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1}}
METRIC = {"metricId": "accuracy", "goal": "MAXIMIZE"}
NOT_FOR_TUNING = (
    "accepted: unset (study.proto: 'Currently only supported by the Vertex AI Vizier service. "
    "Not supported by HyperparameterTuningJob or TrainingPipeline.')"
)


def spec(**extra: object) -> dict:
    return {"metrics": [METRIC], "parameters": [LR], "algorithm": "RANDOM_SEARCH", **extra}


def check(study: dict) -> list[str]:
    return validate_study(study, max_trial_count=4, parallel_trial_count=2)


def problems(study: dict) -> list[str]:
    with pytest.raises(PlanError) as err:
        check(study)
    return [str(p) for p in err.value.problems]


@pytest.mark.parametrize(
    "stopping",
    [
        {"medianAutomatedStoppingSpec": {}},
        {"decayCurveStoppingSpec": {"useElapsedDuration": True}},
        {
            "convexAutomatedStoppingSpec": {
                "maxStepCount": "20",  # int64 as REST JSON writes it
                "minStepCount": 2,
                "minMeasurementCount": 3,
                "learningRateParameterName": "lr",
                "useElapsedDuration": False,
                "updateAllStoppedTrials": True,
            }
        },
    ],
)
def test_each_stopping_rule_passes_also_as_the_proto_prints_it(stopping: dict) -> None:
    assert check(spec(**stopping)) == []
    proto = StudySpec.from_json(json.dumps(spec(**stopping)))
    assert check(to_rest(StudySpec.to_dict(proto))) == []


def test_the_oneof_takes_one_rule_with_its_own_sound_fields() -> None:
    assert problems(spec(medianAutomatedStoppingSpec={}, decayCurveStoppingSpec={})) == [
        "studySpec: ['medianAutomatedStoppingSpec', 'decayCurveStoppingSpec'] given together; "
        "accepted: at most one (a oneof)"
    ]
    assert problems(spec(medianAutomatedStoppingSpec={"minStepCount": 3})) == [
        "studySpec.medianAutomatedStoppingSpec.minStepCount: unknown; accepted: useElapsedDuration"
    ]
    convex = {
        "maxStepCount": -1,
        "minMeasurementCount": 2.5,
        "useElapsedDuration": "yes",
        "learningRateParameterName": "eta",
    }
    assert problems(spec(convexAutomatedStoppingSpec=convex)) == [
        "studySpec.convexAutomatedStoppingSpec.maxStepCount: -1; accepted: a whole number >= 0",
        "studySpec.convexAutomatedStoppingSpec.minMeasurementCount: 2.5; "
        "accepted: a whole number >= 0",
        "studySpec.convexAutomatedStoppingSpec.useElapsedDuration: 'yes'; accepted: true or false",
        "studySpec.convexAutomatedStoppingSpec.learningRateParameterName: 'eta' is not a "
        "parameter of the study; accepted: lr",
    ]
    steps = {"maxStepCount": 10, "minStepCount": 10}
    assert problems(spec(convexAutomatedStoppingSpec=steps)) == [
        "studySpec.convexAutomatedStoppingSpec.minStepCount: 10 >= maxStepCount 10; accepted: less"
    ]


def test_the_learning_rate_may_be_a_conditional_parameter() -> None:
    optimizer = {
        "parameterId": "opt",
        "categoricalValueSpec": {"values": ["sgd", "adam"]},
        "conditionalParameterSpecs": [
            {
                "parentCategoricalValues": {"values": ["sgd"]},
                "parameterSpec": {**LR, "parameterId": "eta"},
            }
        ],
    }
    study = spec(convexAutomatedStoppingSpec={"learningRateParameterName": "eta"})
    study["parameters"] = [optimizer]
    assert check(study) == []


def test_fields_tuning_jobs_do_not_support_are_refused() -> None:
    assert problems(spec(observationNoise="HIGH")) == [
        f"studySpec.observationNoise: 'HIGH'; {NOT_FOR_TUNING}"
    ]
    assert problems(spec(observationNoise=1)) == [
        f"studySpec.observationNoise: 1; {NOT_FOR_TUNING}"
    ]
    assert check(spec(observationNoise="OBSERVATION_NOISE_UNSPECIFIED")) == []
    lr = {**LR, "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1, "defaultValue": 0.01}}
    assert problems({**spec(), "parameters": [lr]}) == [
        f"studySpec.parameters[lr].doubleValueSpec.defaultValue: 0.01; {NOT_FOR_TUNING}"
    ]


def test_study_stopping_config_and_stopping_with_many_metrics_pass_with_a_warning() -> None:
    assert check(spec(studyStoppingConfig={"maxNumTrials": 3})) == [
        "studySpec.studyStoppingConfig is passed to Vertex unchanged, but whether a "
        "HyperparameterTuningJob honours it is not documented (study.proto describes it for "
        "Vizier studies), and the local emulator does not apply it"
    ]
    study = spec(medianAutomatedStoppingSpec={})
    study["metrics"] = [METRIC, {"metricId": "loss", "goal": "MINIMIZE"}]
    assert check(study) == [
        "studySpec.medianAutomatedStoppingSpec with 2 metrics: Vizier's early stopping "
        "supports single-objective studies only; the emulator judges the first"
    ]
