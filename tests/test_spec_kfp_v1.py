"""Pipelines compiled by kfp 1.8's v2 compiler (schemaVersion 2.0.0), read as Vertex reads them.

The fixtures in ``tests/fixtures/kfp18/`` were compiled once by kfp 1.8.22 with GCPC 1.0.33
(``tests/fixtures/kfp18/pipelines.py`` says how); ``hp_tuning.json`` stands in for the pipeline
of Google's ``notebooks/official/pipelines/get_started_with_hpt_pipeline_components.ipynb``.
What is asserted, with its source:

- the runtime field that binds a run's parameters follows the spec's schema version
  (aiplatform v1 ``pipeline_job.proto``, ``RuntimeConfig.parameters``: "used by pipelines
  built using ``PipelineJob.pipeline_spec.schema_version`` 2.0.0 or lower"; google-cloud-
  aiplatform ``utils/pipeline_utils.py`` ``PipelineRuntimeConfigBuilder.build``), and a field
  that does not match fails (sky-uk/kfp-operator pull request #1277: Vertex "failed the job
  with INTERNAL_ERROR because the runtime config and the submitted pipelineSpec disagreed");
- a Value's int64 ``intValue`` is a JSON string (proto3 JSON mapping), read as an int;
- kfp 1.8's executor reads ``inputs.parameters[NAME]`` Values and writes its outputs as
  ``parameters`` Values (kfp ``sdk/python/kfp/v2/components/executor.py``,
  ``_get_input_parameter_value`` and ``_write_output_parameter_value``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trainpool.emulator.pipeline_jobs import task_packages
from trainpool.errors import InputError
from trainpool.kfp_local import containers
from trainpool.spec import kfp_v1
from trainpool.spec.pipeline_params import load_pipeline_document, pipeline_inputs

FIXTURES = Path(__file__).parent / "fixtures" / "kfp18"


def compiled(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return load_pipeline_document(FIXTURES / f"{name}.json")


def test_kfp18_writes_a_pipeline_job_of_schema_2_0_0_with_typed_parameters() -> None:
    document = json.loads((FIXTURES / "gcpc_v1.json").read_text())
    assert set(document) == {"pipelineSpec", "runtimeConfig"}
    spec, config = compiled("gcpc_v1")
    assert spec["schemaVersion"] == "2.0.0" and spec["sdkVersion"] == "kfp-1.8.22"
    assert kfp_v1.is_v1(spec)
    assert config["parameters"]["max_trial_count"] == {"intValue": "2"}
    assert kfp_v1.runtime_values(spec, config) == {
        "base_output_directory": "gs://kfp18-fixture/out",
        "max_trial_count": 2,
        "parallel_trial_count": 1,
        "project": "demo",
        "region": "us-central1",
    }
    assert pipeline_inputs(spec)["max_trial_count"] == "NUMBER_INTEGER"
    assert pipeline_inputs(spec)["trial_pool_specs"] == "STRING", "a list is JSON in a STRING"


def test_the_field_the_schema_binds_is_read_and_the_other_refused() -> None:
    old, _ = compiled("gcpc_v1")
    new = {**old, "schemaVersion": "2.1.0"}
    assert kfp_v1.runtime_values(old, {"parameters": {"x": {"doubleValue": 0.5}}}) == {"x": 0.5}
    assert kfp_v1.runtime_values(new, {"parameterValues": {"x": 0.5}}) == {"x": 0.5}
    with pytest.raises(InputError) as caught:
        kfp_v1.runtime_values(
            old, {"parameters": {"x": {"intValue": "1"}}, "parameterValues": {"x": 1}}
        )
    assert str(caught.value).startswith("pipeline_job.runtime_config.parameter_values: x given")
    assert "schemaVersion 2.0.0" in str(caught.value)
    with pytest.raises(InputError) as caught:
        kfp_v1.runtime_values(new, {"parameters": {"x": {"intValue": "1"}}})
    assert str(caught.value).startswith("pipeline_job.runtime_config.parameters: x given")
    assert "accepted: parameter_values" in str(caught.value)
    with pytest.raises(InputError, match=r"parameters\['x'\]: .*accepted: a Value"):
        kfp_v1.runtime_values(old, {"parameters": {"x": {"boolValue": True}}})


def test_upgrade_writes_the_2_1_0_shape_kfp_local_loads() -> None:
    from kfp import components

    spec, _ = compiled("gcpc_v1")
    new = kfp_v1.upgrade(spec)
    assert new["schemaVersion"] == "2.1.0" and spec["schemaVersion"] == "2.0.0", "a copy"
    text = json.dumps(new)
    assert '"type":' not in text and "constantValue" not in text and "pipelineparam--" not in text
    hpt = new["root"]["dag"]["tasks"]["hyperparameter-tuning-job"]["inputs"]["parameters"]
    assert hpt["max_failed_trial_count"] == {"runtimeValue": {"constant": 0}}
    assert hpt["study_spec_algorithm"] == {"runtimeValue": {"constant": "ALGORITHM_UNSPECIFIED"}}
    conditions = {
        name: task["triggerPolicy"]["condition"]
        for name, task in new["root"]["dag"]["tasks"].items()
        if "triggerPolicy" in task
    }
    assert conditions == {
        "condition-upload-decision-1": (
            "int(inputs.parameter_values['pipelinechannel--max_trial_count']) > 1"
        ),
        "condition-never-2": (
            "int(inputs.parameter_values['pipelinechannel--max_trial_count']) > 100"
        ),
    }
    upload = new["components"]["comp-model-upload"]["inputDefinitions"]
    assert upload["artifacts"]["unmanaged_container_model"]["artifactType"] == {
        "schemaTitle": "google.UnmanagedContainerModel",
        "schemaVersion": "0.0.1",
    }
    assert upload["parameters"]["display_name"] == {"parameterType": "STRING"}
    assert containers.unrunnable(new) == [], "GCPC 1.x launchers are GCPC's v1 launchers"
    component = components.load_component_from_text(json.dumps(new))
    assert component.name == "gcpc-v1"


def test_a_2_1_0_spec_is_left_as_it_is() -> None:
    spec = {"schemaVersion": "2.1.0", "root": {"inputDefinitions": {"parameters": {}}}}
    assert kfp_v1.upgrade(spec) == spec and not kfp_v1.is_v1(spec)


def test_an_instance_schema_becomes_the_title_it_names() -> None:
    spec = {
        "schemaVersion": "2.0.0",
        "root": {},
        "components": {
            "comp-a": {
                "outputDefinitions": {
                    "artifacts": {
                        "m": {"artifactType": {"instanceSchema": "title: system.Model\n"}},
                        "o": {"artifactType": {"instanceSchema": "title: kfp.Custom\n"}},
                    }
                }
            }
        },
    }
    out = kfp_v1.upgrade(spec)["components"]["comp-a"]["outputDefinitions"]["artifacts"]
    assert out["m"]["artifactType"] == {"schemaTitle": "system.Model", "schemaVersion": "0.0.1"}
    assert out["o"]["artifactType"]["schemaTitle"] == "system.Artifact"


def test_an_unknown_v1_type_is_refused_naming_it() -> None:
    spec = {"schemaVersion": "2.0.0", "root": {"inputDefinitions": {"parameters": {}}}}
    spec["root"]["inputDefinitions"]["parameters"]["x"] = {"type": "BYTES"}
    with pytest.raises(InputError, match=r"root.inputDefinitions.parameters\['x'\].type: 'BYTES'"):
        kfp_v1.upgrade(spec)


def test_the_notebooks_kfp18_components_run_as_python_tasks_with_their_installs() -> None:
    spec, _ = compiled("hp_tuning")
    new = kfp_v1.upgrade(spec)
    assert containers.unrunnable(new) == []
    executors = new["deploymentSpec"]["executors"]
    trials = executors["exec-gettrialsop"]["container"]
    command = [*trials["command"], *trials["args"]]
    assert containers.verdict(command) == ("python", "")
    assert kfp_v1.is_v1_component(command)
    found = task_packages.bootstrap(trials["command"])
    assert found is not None, "kfp 1.8's bootstrap is understood: its installs run once per image"
    installs, _ = found
    assert installs == [
        ["google-cloud-aiplatform", "google-cloud-pipeline-components", "protobuf", "kfp==1.8.22"]
    ]
    condition = new["components"]["comp-condition-deploy-decision-1"]
    assert set(condition["inputDefinitions"]["parameters"]) >= {
        "pipelinechannel--getbesttrialop-Output",
        "pipelinechannel--ismetricbeyondthresholdop-Output",
    }
    [decision] = [
        t["triggerPolicy"]["condition"]
        for t in new["root"]["dag"]["tasks"].values()
        if "triggerPolicy" in t
    ]
    assert decision == (
        "inputs.parameter_values['pipelinechannel--ismetricbeyondthresholdop-Output'] == 'true'"
    )


def test_a_kfp18_component_gets_values_and_its_outputs_are_read_back() -> None:
    values = {"name": "a", "count": 3, "rate": 0.5, "whole": 2.0}
    assert kfp_v1.v1_parameters(values) == {
        "name": {"stringValue": "a"},
        "count": {"intValue": 3},
        "rate": {"doubleValue": 0.5},
        "whole": {"doubleValue": 2.0},
    }
    written = {
        "parameters": {
            "Output": {"stringValue": '{"id": "1"}'},
            "n": {"intValue": 4},
            "r": {"doubleValue": 0.25},
        },
        "artifacts": {"model": {"artifacts": [{"name": "m", "uri": "gs://b/m"}]}},
    }
    read = kfp_v1.executor_output(written)
    assert read["parameterValues"] == {"Output": '{"id": "1"}', "n": 4, "r": 0.25}
    assert read["parameters"] == written["parameters"], "the notebook reads the file back"
    assert read["artifacts"] == written["artifacts"]


def test_kfp18_conditions_read_values_as_kfp2_does() -> None:
    old = "inputs.parameters['pipelineparam--x'].double_value >= 0.5 && " + (
        "inputs.parameters['pipelineparam--y'].string_value == 'true'"
    )
    assert kfp_v1.upgrade_condition(old) == (
        "float(inputs.parameter_values['pipelineparam--x']) >= 0.5 && "
        "inputs.parameter_values['pipelineparam--y'] == 'true'"
    )


def test_an_argo_workflow_of_kfp_1s_v1_compiler_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.yaml"
    path.write_text("apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nspec: {}\n")
    with pytest.raises(InputError) as caught:
        load_pipeline_document(path)
    assert "is an Argo Workflow" in str(caught.value)
    assert "accepted: the same pipeline compiled by kfp 1.8's v2 compiler" in str(caught.value)
