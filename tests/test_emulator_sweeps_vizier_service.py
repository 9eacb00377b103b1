"""VizierService with the Vertex AI SDK's own Vizier client, unchanged, over gRPC and REST,
and with the generated v1 and v1beta1 clients and raw REST for the rest.

Vertex's behaviour asserted is what the API's comments say
(``google/cloud/aiplatform_v1/types/vizier_service.py``, ``study.py``, googleapis/python-
aiplatform v1.165.1) and what the SDK relies on (``google/cloud/aiplatform/vizier/study.py``:
``create_or_load`` reads ALREADY_EXISTS as "look it up by display name"): a client's
ACTIVE trials are suggested to it again, a study's display name is unique, the optimal
trial of one objective and the Pareto front of several, the tuning job's stopping rules.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions
from google.cloud import aiplatform, aiplatform_v1, aiplatform_v1beta1
from google.cloud.aiplatform.vizier import Study
from google.cloud.aiplatform.vizier import pyvizier as vz

from trainpool.testing import emulated_vertex

pytestmark = pytest.mark.timeout(120)
PROJECT = "demo"
LOCATION = "us-central1"
PARENT = f"projects/{PROJECT}/locations/{LOCATION}"
TrialState = aiplatform_v1.Trial.State


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with emulated_vertex(tmp_path_factory.mktemp("vizier") / "root", PROJECT) as running:
        yield running


def problem() -> vz.StudyConfig:
    statement = vz.StudyConfig()  # the SDK's ProblemStatement with to_proto()
    root = statement.search_space.root
    # a default value: "Currently only supported by the Vertex AI Vizier service" (study.proto)
    root.add_float_param("lr", 1e-4, 1e-1, default_value=1e-2, scale_type=vz.ScaleType.LOG)
    root.add_categorical_param("opt", ["adam", "sgd"])
    statement.metric_information.append(
        vz.MetricInformation(name="acc", goal=vz.ObjectiveMetricGoal.MAXIMIZE)
    )
    return statement


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_study_as_the_sdk_runs_it(emu: Any, transport: str) -> None:
    aiplatform.init(project=PROJECT, location=LOCATION, api_transport=transport)
    study = Study.create_or_load(display_name=f"sdk-{transport}", problem=problem())
    if transport == "grpc":
        again = Study.create_or_load(display_name=f"sdk-{transport}", problem=problem())
        assert again.resource_name == study.resource_name, "display names are unique: looked up"
    else:  # REST's 409 is api_core's Conflict, not the AlreadyExists create_or_load catches:
        # the SDK fails so against Vertex too (ALREADY_EXISTS is 409, google/rpc/code.proto)
        with pytest.raises(exceptions.Conflict, match="already exists"):
            Study.create_or_load(display_name=f"sdk-{transport}", problem=problem())

    first = list(study.suggest(count=2, worker="w0"))
    assert len(first) == 2 and [t.uid for t in first] == [1, 2]
    for trial in first:
        assert 1e-4 <= trial.parameters["lr"].value <= 1e-1
        assert trial.parameters["opt"].value in ("adam", "sgd")
    repeat = list(study.suggest(count=2, worker="w0"))
    assert [t.uid for t in repeat] == [1, 2], "a client's ACTIVE trials are returned again"
    other = list(study.suggest(count=1, worker="w1"))
    assert [t.uid for t in other] == [3], "another client gets a trial of its own"

    good, bad = first
    good.add_measurement(vz.Measurement(metrics={"acc": 0.5}, steps=1))
    assert good.should_stop() is False, "no stopping rule: never stopped"
    final = good.complete(vz.Measurement(metrics={"acc": 0.9}, steps=2))
    assert final is not None and final.metrics["acc"].value == pytest.approx(0.9)
    assert good.status == vz.TrialStatus.COMPLETED
    assert bad.complete(infeasible_reason="diverged") is None
    assert bad.materialize().infeasibility_reason == "diverged"

    assert [t.uid for t in study.optimal_trials()] == [1]
    assert [t.uid for t in study.suggest(count=1, worker="w0")] == [4], "a new one once done"
    assert len(study.trials()) == 4
    other[0].delete()
    assert [t.uid for t in study.trials()] == [1, 2, 4]
    # (the SDK's materialize_study_config passes credentials= to get_study and fails itself)
    got = aiplatform_v1.VizierServiceClient().get_study(name=study.resource_name)
    assert got.study_spec.metrics[0].metric_id == "acc"
    listed = aiplatform_v1.VizierServiceClient().list_studies(parent=PARENT)
    assert study.resource_name in [s.name for s in listed]
    study.delete()
    with pytest.raises(exceptions.NotFound):
        study.trials()


def test_early_stopping_follows_the_median_rule_and_stop_trial(emu: Any) -> None:
    client = aiplatform_v1.VizierServiceClient()
    spec = {
        "metrics": [{"metric_id": "loss", "goal": "MINIMIZE"}],
        "parameters": [
            {"parameter_id": "x", "integer_value_spec": {"min_value": 1, "max_value": 9}}
        ],
        "median_automated_stopping_spec": {},
        "algorithm": "RANDOM_SEARCH",
    }
    study = client.create_study(parent=PARENT, study={"display_name": "median", "study_spec": spec})
    trials = (
        client.suggest_trials(
            request={"parent": study.name, "suggestion_count": 4, "client_id": "a"}
        )
        .result()
        .trials
    )
    assert len(trials) == 4 and all(t.state == TrialState.ACTIVE for t in trials)
    for trial in trials[:3]:  # three completed trials whose loss falls to 1
        for step in range(1, 6):
            client.add_trial_measurement(
                request={
                    "trial_name": trial.name,
                    "measurement": {
                        "step_count": step,
                        "metrics": [{"metric_id": "loss", "value": 6 - step}],
                    },
                }
            )
        client.complete_trial(request={"name": trial.name})
    done = client.get_trial(name=trials[0].name)
    assert done.state == TrialState.SUCCEEDED and done.final_measurement.metrics[0].value == 1
    pending = trials[3]
    for step in range(1, 5):  # far worse than the median of the running averages
        client.add_trial_measurement(
            request={
                "trial_name": pending.name,
                "measurement": {
                    "step_count": step,
                    "metrics": [{"metric_id": "loss", "value": 50}],
                },
            }
        )
    answer = client.check_trial_early_stopping_state(request={"trial_name": pending.name})
    assert answer.result().should_stop is True
    assert client.get_trial(name=pending.name).state == TrialState.STOPPING

    fresh = (
        client.suggest_trials(
            request={"parent": study.name, "suggestion_count": 1, "client_id": "b"}
        )
        .result()
        .trials[0]
    )
    stopped = client.stop_trial(request={"name": fresh.name})
    assert stopped.state == TrialState.STOPPING
    checked = client.check_trial_early_stopping_state(request={"trial_name": fresh.name})
    assert checked.result().should_stop is True
    client.delete_study(name=study.name)


def test_pareto_front_grid_and_v1beta1(emu: Any) -> None:
    client = aiplatform_v1beta1.VizierServiceClient()
    spec = {
        "metrics": [
            {"metric_id": "acc", "goal": "MAXIMIZE"},
            {"metric_id": "cost", "goal": "MINIMIZE"},
        ],
        "parameters": [
            {"parameter_id": "n", "integer_value_spec": {"min_value": 1, "max_value": 4}}
        ],
        "algorithm": "GRID_SEARCH",
    }
    study = client.create_study(parent=PARENT, study={"display_name": "pareto", "study_spec": spec})
    got = client.suggest_trials(
        request={"parent": study.name, "suggestion_count": 3, "client_id": "a"}
    ).result()
    assert [t.parameters[0].value for t in got.trials] == [1, 2, 3], "the grid in order"
    scores = [(0.9, 5.0), (0.8, 1.0), (0.7, 6.0)]  # the third is dominated by the first
    for trial, (acc, cost) in zip(got.trials, scores, strict=True):
        client.complete_trial(
            request={
                "name": trial.name,
                "final_measurement": {
                    "metrics": [
                        {"metric_id": "acc", "value": acc},
                        {"metric_id": "cost", "value": cost},
                    ]
                },
            }
        )
    front = client.list_optimal_trials(request={"parent": study.name}).optimal_trials
    assert sorted(t.id for t in front) == ["1", "2"]
    last = client.suggest_trials(
        request={"parent": study.name, "suggestion_count": 2, "client_id": "b"}
    ).result()
    assert [t.parameters[0].value for t in last.trials] == [4]
    assert last.study_state == aiplatform_v1beta1.Study.State.COMPLETED, "the grid is exhausted"


def test_bad_input_is_refused_naming_the_field(emu: Any) -> None:
    client = aiplatform_v1.VizierServiceClient()
    with pytest.raises(exceptions.InvalidArgument) as bad:
        client.create_study(
            parent=PARENT,
            study={
                "display_name": "bad",
                "study_spec": {
                    "metrics": [{"metric_id": "acc", "goal": "MAXIMIZE"}],
                    "parameters": [
                        {
                            "parameter_id": "lr",
                            "double_value_spec": {"min_value": 0.1, "max_value": 1},
                        }
                    ],
                    "algorithm": "GRID_SEARCH",
                },
            },
        )
    assert "study.studySpec.algorithm" in bad.value.message and "accepted" in bad.value.message
    noisy = {
        "metrics": [{"metric_id": "acc", "goal": "MAXIMIZE"}],
        "parameters": [
            {
                "parameter_id": "n",
                "integer_value_spec": {"min_value": 1, "max_value": 4, "default_value": 9},
            }
        ],
        "observation_noise": "HIGH",
    }
    with pytest.raises(exceptions.InvalidArgument) as bad:
        client.create_study(parent=PARENT, study={"display_name": "noisy", "study_spec": noisy})
    assert bad.value.message.startswith(
        "study.studySpec.parameters[n].integerValueSpec.defaultValue: 9.0; accepted: 1 to 4"
    ), "observation_noise is a study's (Vizier only), the default out of range is refused"
    noisy["parameters"][0]["integer_value_spec"]["default_value"] = 2
    client.delete_study(
        name=client.create_study(
            parent=PARENT, study={"display_name": "noisy", "study_spec": noisy}
        ).name
    )
    with pytest.raises(exceptions.InvalidArgument, match="study.studySpec.parameters"):
        client.create_study(
            parent=PARENT,
            study={"display_name": "empty", "study_spec": {"metrics": [{"metric_id": "a"}]}},
        )
    study = client.create_study(
        parent=PARENT,
        study={
            "display_name": "hostile",
            "study_spec": {
                "metrics": [{"metric_id": "acc", "goal": "MAXIMIZE"}],
                "parameters": [
                    {"parameter_id": "opt", "categorical_value_spec": {"values": ["a", "b"]}}
                ],
            },
        },
    )
    with pytest.raises(exceptions.AlreadyExists):
        client.create_study(
            parent=PARENT, study={"display_name": "hostile", "study_spec": study.study_spec}
        )
    with pytest.raises(exceptions.NotFound):
        client.get_trial(name=f"{study.name}/trials/999")
    with pytest.raises(exceptions.InvalidArgument, match="not a trial name"):
        client.get_trial(name=f"{study.name}/trials/../1")
    with pytest.raises(exceptions.InvalidArgument, match="suggestion_count"):
        client.suggest_trials(
            request={"parent": study.name, "suggestion_count": 0, "client_id": "a"}
        )
    with pytest.raises(exceptions.InvalidArgument, match="client_id"):
        client.suggest_trials(request={"parent": study.name, "suggestion_count": 1})
    with pytest.raises(exceptions.InvalidArgument, match="trial.parameters"):
        client.create_trial(
            parent=study.name, trial={"parameters": [{"parameter_id": "nope", "value": 1}]}
        )
    requested = client.create_trial(
        parent=study.name, trial={"parameters": [{"parameter_id": "opt", "value": "b"}]}
    )
    assert requested.state == TrialState.REQUESTED
    handed = (
        client.suggest_trials(
            request={"parent": study.name, "suggestion_count": 1, "client_id": "c"}
        )
        .result()
        .trials
    )
    assert [t.name for t in handed] == [requested.name], "a REQUESTED trial is suggested first"
    final = {"metrics": [{"metric_id": "acc", "value": 1.0}]}
    client.complete_trial(request={"name": requested.name, "final_measurement": final})
    with pytest.raises(exceptions.FailedPrecondition, match="SUCCEEDED"):
        client.complete_trial(request={"name": requested.name, "final_measurement": final})
    with pytest.raises(exceptions.FailedPrecondition):
        client.add_trial_measurement(request={"trial_name": requested.name, "measurement": final})
    with pytest.raises(exceptions.NotFound):
        client.lookup_study(request={"parent": PARENT, "display_name": "no such study"})
    assert (
        client.lookup_study(request={"parent": PARENT, "display_name": "hostile"}).name
        == study.name
    )


def rest(emu: Any, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    token = (emu.root / "storage.token").read_text().strip()
    data = json.dumps(body).encode() if body is not None else None
    host = f"{LOCATION}-aiplatform.googleapis.com"
    request = urllib.request.Request(f"{emu.rest_address}/{host}{path}", data=data, method=method)
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_raw_rest(emu: Any, version: str) -> None:
    spec = {
        "metrics": [{"metricId": "acc", "goal": "MAXIMIZE"}],
        "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}],
    }
    status, study = rest(
        emu,
        "POST",
        f"/{version}/{PARENT}/studies",
        {"displayName": f"rest-{version}", "studySpec": spec},
    )
    assert status == 200 and study["state"] == "ACTIVE", study
    status, operation = rest(
        emu,
        "POST",
        f"/{version}/{study['name']}/trials:suggest",
        {"suggestionCount": 2, "clientId": "r"},
    )
    assert status == 200 and operation["done"], operation
    trials = operation["response"]["trials"]
    assert [t["id"] for t in trials] == ["1", "2"] and trials[0]["clientId"] == "r"
    status, polled = rest(emu, "GET", f"/{version}/{operation['name']}")
    assert status == 200 and polled["response"]["trials"] == trials
    name = trials[0]["name"]
    final = {"finalMeasurement": {"metrics": [{"metricId": "acc", "value": 0.5}]}}
    status, done = rest(emu, "POST", f"/{version}/{name}:complete", final)
    assert status == 200 and done["state"] == "SUCCEEDED", done
    status, again = rest(emu, "POST", f"/{version}/{name}:complete", final)
    assert status == 400 and again["error"]["status"] == "FAILED_PRECONDITION", again
    status, optimal = rest(emu, "POST", f"/{version}/{study['name']}/trials:listOptimalTrials", {})
    assert status == 200 and [t["name"] for t in optimal["optimalTrials"]] == [name]
    status, missing = rest(emu, "GET", f"/{version}/{study['name']}/trials/77")
    assert status == 404 and missing["error"]["status"] == "NOT_FOUND"
    status, bad = rest(
        emu,
        "POST",
        f"/{version}/{PARENT}/studies",
        {"displayName": "bad-rest", "studySpec": {**spec, "metrics": []}},
    )
    assert status == 400 and "study.studySpec.metrics" in bad["error"]["message"], bad
    status, _ = rest(emu, "DELETE", f"/{version}/{study['name']}")
    assert status == 200


def test_a_restarted_emulator_keeps_its_studies_and_suggests_alike(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trainpool.emulator as emulator
    from trainpool import config
    from trainpool.vertex.clients import vizier_client

    spec = {
        "metrics": [{"metric_id": "acc", "goal": "MAXIMIZE"}],
        "parameters": [
            {"parameter_id": "x", "double_value_spec": {"min_value": 0, "max_value": 1}}
        ],
        "algorithm": "RANDOM_SEARCH",
    }
    answers = []
    for _ in range(2):
        with emulator.start(tmp_path / "root", storage=False) as running:
            monkeypatch.setenv(config.EMULATOR_ENV, running.address)
            client = vizier_client(LOCATION)
            if not answers:
                study = client.create_study(
                    parent=PARENT, study={"display_name": "kept", "study_spec": spec}
                )
                first = (
                    client.suggest_trials(
                        request={"parent": study.name, "suggestion_count": 1, "client_id": "a"}
                    )
                    .result()
                    .trials[0]
                )
                final = {"metrics": [{"metric_id": "acc", "value": 0.5}]}
                client.complete_trial(request={"name": first.name, "final_measurement": final})
            study = client.lookup_study(request={"parent": PARENT, "display_name": "kept"})
            # a trial CreateTrial asks for must lie in its parameter's range
            with pytest.raises(exceptions.InvalidArgument, match=r"trial.parameters\[0\].value"):
                client.create_trial(
                    parent=study.name, trial={"parameters": [{"parameter_id": "x", "value": 2}]}
                )
            trials = client.list_trials(parent=study.name).trials
            assert [t.id for t in trials] == ["1"] and trials[0].state == TrialState.SUCCEEDED
            got = (
                client.suggest_trials(
                    request={"parent": study.name, "suggestion_count": 2, "client_id": "b"}
                )
                .result()
                .trials
            )
            answers.append([(t.id, t.parameters[0].value) for t in got])
            for made in got:  # leave the study as the first run found it
                client.delete_trial(name=made.name)
    assert answers[0][0][0] == "2" and answers[1][0][0] == "4", "trial ids are never reused"
    assert [v for _, v in answers[0]] == [v for _, v in answers[1]], "the same suggestions"


def google_study_config() -> vz.StudyConfig:
    """The study of the SDK's own system tests (googleapis/python-aiplatform
    ``tests/system/aiplatform/test_vizier.py``, commit 04108e901dbd6a0145892433edb3d4ffb6661dd3)."""
    sc = vz.StudyConfig()
    sc.algorithm = vz.Algorithm.RANDOM_SEARCH
    sc.metric_information.append(
        vz.MetricInformation(name="pr-auc", goal=vz.ObjectiveMetricGoal.MAXIMIZE)
    )
    root = sc.search_space.select_root()
    root.add_float_param("learning_rate", 0.00001, 1.0, scale_type=vz.ScaleType.LINEAR)
    root.add_categorical_param("optimizer", ["adagrad", "adam", "experimental"])
    sc.automated_stopping_config = vz.AutomatedStoppingConfig.decay_curve_stopping_config(
        use_steps=True
    )
    return sc


def test_googles_own_vizier_system_tests(emu: Any) -> None:
    """test_vizier_lifecycle, test_vizier_study_deletion and test_vizier_trial_deletion as
    Google wrote them against Vertex (study names of their own here)."""
    from google.cloud.aiplatform.vizier import Trial as SdkTrial

    aiplatform.init(project=PROJECT, location=LOCATION)
    study = Study.create_or_load(display_name="google-lifecycle", problem=google_study_config())
    trials = study.suggest(count=3, worker="halio_test_worker")
    for trial in trials:
        if not trial.should_stop():
            measurement = vz.Measurement()
            measurement.metrics["pr-auc"] = 0.4
            trial.add_measurement(measurement=measurement)
            trial.complete(measurement=measurement)
    optimal_trials = study.optimal_trials()
    for trial in study.trials():
        assert trial.status == vz.TrialStatus.COMPLETED
    assert optimal_trials[0].status == vz.TrialStatus.COMPLETED

    study = Study.create_or_load(display_name="google-deletion", problem=google_study_config())
    assert Study(study_id=study.name).resource_name == study.resource_name  # found before
    study.delete()
    with pytest.raises(exceptions.NotFound):
        Study(study_id=study.name)

    study = Study.create_or_load(display_name="google-trial", problem=google_study_config())
    trials = study.suggest(count=1, worker="halio_test_worker")
    found = SdkTrial(study_id=study.name, trial_name=trials[0].name)  # found before
    assert found.resource_name == trials[0].resource_name
    trials[0].delete()
    with pytest.raises(exceptions.NotFound):
        SdkTrial(study_id=study.name, trial_name=trials[0].name)


def test_max_num_trials_completes_the_study(emu: Any) -> None:
    client = aiplatform_v1.VizierServiceClient()
    spec = {
        "metrics": [{"metric_id": "acc", "goal": "MAXIMIZE"}],
        "parameters": [
            {"parameter_id": "x", "double_value_spec": {"min_value": 0, "max_value": 1}}
        ],
        "study_stopping_config": {"max_num_trials": 2},
    }
    study = client.create_study(parent=PARENT, study={"display_name": "capped", "study_spec": spec})
    got = client.suggest_trials(
        request={"parent": study.name, "suggestion_count": 3, "client_id": "a"}
    ).result()
    assert len(got.trials) == 2 and got.study_state == aiplatform_v1.Study.State.COMPLETED
    assert client.get_study(name=study.name).state == aiplatform_v1.Study.State.COMPLETED
