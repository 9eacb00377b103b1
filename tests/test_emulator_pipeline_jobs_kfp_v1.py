"""A PipelineJob compiled by kfp 1.8 (schemaVersion 2.0.0, GCPC 1.0.33's components) submitted
with the official ``google-cloud-aiplatform`` SDK, as Google's notebook
``notebooks/official/pipelines/get_started_with_hpt_pipeline_components.ipynb`` submits one
(``aiplatform.PipelineJob(template_path="hp_tune_pipeline_job.json", parameter_values=...)``),
and the same file run with ``trainpool run --local``'s ``run_local``.

What is asserted is what Vertex does, with its source:

- the SDK sends a 2.0.0 spec's parameters in ``runtimeConfig.parameters`` as typed Values, a
  ``list`` JSON-dumped into ``stringValue`` (google-cloud-aiplatform ``utils/pipeline_utils.py``
  ``PipelineRuntimeConfigBuilder.update_runtime_parameters``, ``build``, ``_get_vertex_value``),
  and Vertex runs them ("This field is used by pipelines built using
  ``PipelineJob.pipeline_spec.schema_version`` 2.0.0 or lower", aiplatform v1
  ``pipeline_job.proto``); defaults the kfp 1.8 compiler wrote in ``runtimeConfig`` apply;
- the field the schema does not bind is refused at create (Vertex fails such a run:
  sky-uk/kfp-operator pull request #1277);
- a condition that does not hold leaves its tasks ``NOT_TRIGGERED`` ("the task's trigger
  policy is not satisfied", ``PipelineTaskDetail.State``, pipeline_job.proto).

The trial trainer runs in :data:`fixtures.host_image.HOST_IMAGE` (it imports
cloudml-hypertune), as on Vertex it would run in an image that has it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_image import host_image
from fixtures.vertex import fresh_pipeline_sdk
from google.api_core import exceptions
from google.cloud import aiplatform
from google.cloud.aiplatform import hyperparameter_tuning as hpt
from google.cloud.aiplatform_v1.types import pipeline_job as pj
from google_cloud_pipeline_components.v1.hyperparameter_tuning_job import (
    serialize_metrics,
    serialize_parameters,
)

import trainpool.emulator as emulator
from trainpool.emulated.pipeline_run import run_local
from trainpool.testing import emulated_vertex
from trainpool.vertex.clients import job_client, model_client, pipeline_client

pytestmark = pytest.mark.timeout(300)
FIXTURES = Path(__file__).parent / "fixtures" / "kfp18"
WHERE = {"project": "demo", "location": "us-central1"}
PARENT = "projects/demo/locations/us-central1"
ROOT = "gs://demo-root/kfp18"
REPORT = (
    "import argparse, hypertune; p = argparse.ArgumentParser(); "
    "p.add_argument('--learning_rate', type=float); p.add_argument('--batch_size', type=int); "
    "a = p.parse_args(); "
    "hypertune.HyperTune().report_hyperparameter_tuning_metric("
    "'accuracy', 1 - abs(a.learning_rate - 0.01))"
)


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulator.Emulator]:
    with emulated_vertex(tmp_path_factory.mktemp("kfp18") / "root", "demo") as running:
        host_image(running.root)
        yield running


@pytest.fixture
def sdk(emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch) -> emulator.Emulator:
    fresh_pipeline_sdk(monkeypatch)
    return emu


def params(display_name: str) -> dict[str, Any]:
    """The notebook's parameters: lists of dicts, as the notebook passes them."""
    pool = {
        "machine_spec": {"machine_type": "n1-standard-4"},
        "replica_count": 1,
        "container_spec": {"image_uri": "local/host-packages:1", "command": [sys.executable]},
    }
    pool["container_spec"]["command"] += ["-c", REPORT]
    return {
        "display_name": display_name,
        "trial_pool_specs": [pool],
        "study_spec_metrics": serialize_metrics({"accuracy": "maximize"}),
        "study_spec_parameters": serialize_parameters(
            {
                "learning_rate": hpt.DoubleParameterSpec(min=0.001, max=1, scale="log"),
                "batch_size": hpt.DiscreteParameterSpec(values=[16, 32, 64], scale=None),
            }
        ),
        "model_uri": f"gs://kfp18-fixture/{display_name}",
    }


def sweeps(display_name: str) -> list[Any]:
    return [
        s
        for s in job_client("us-central1").list_hyperparameter_tuning_jobs(parent=PARENT)
        if s.display_name == display_name
    ]


def models(display_name: str) -> list[Any]:
    found = model_client("us-central1").list_models(parent=PARENT)
    return [m for m in found if m.display_name == display_name]


def test_the_sdk_runs_a_kfp18_pipeline_job_with_gcpc_1_components(sdk: emulator.Emulator) -> None:
    job = aiplatform.PipelineJob(
        display_name="kfp18-flow",
        template_path=str(FIXTURES / "gcpc_v1.json"),
        pipeline_root=ROOT,
        parameter_values=params("kfp18-flow"),
        enable_caching=False,
        **WHERE,
    )
    job.run()
    assert job.state.name == "PIPELINE_STATE_SUCCEEDED"
    stored = pipeline_client("us-central1").get_pipeline_job(name=job.resource_name)
    config = pj.PipelineJob.pb(stored).runtime_config
    assert dict(config.parameter_values) == {}, "the SDK sends a 2.0.0 spec's in parameters"
    assert config.parameters["max_trial_count"].int_value == 2, "the compiled default"
    assert json.loads(config.parameters["trial_pool_specs"].string_value)[0]["replica_count"] == 1
    assert stored.pipeline_spec["schemaVersion"] == "2.0.0", "kept as submitted"
    states = {t.task_name: t.state.name for t in job.task_details if t.task_name != job.name}
    assert states["hyperparameter-tuning-job"] == "SUCCEEDED"
    assert states["model-upload"] == "SUCCEEDED"
    assert states["condition-never-2"] == "NOT_TRIGGERED"
    [sweep] = sweeps("kfp18-flow")
    assert sweep.state.name == "JOB_STATE_SUCCEEDED" and len(sweep.trials) == 2
    batch = {p.value for t in sweep.trials for p in t.parameters if p.parameter_id == "batch_size"}
    assert batch <= {16, 32, 64}
    [model] = models("kfp18-flow")
    assert model.artifact_uri == "gs://kfp18-fixture/kfp18-flow"
    assert not models("never-uploaded")


def test_run_local_runs_the_kfp18_file_with_its_compiled_defaults(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    values = params("kfp18-local")
    for name in ("trial_pool_specs", "study_spec_metrics", "study_spec_parameters"):
        values[name] = json.dumps(values[name])  # a STRING input: the JSON text
    result = run_local(FIXTURES / "gcpc_v1.json", {**values, "max_trial_count": 3}, emu.root)
    assert result.state == "SUCCEEDED", (result.error, [t.tail for t in result.tasks])
    [sweep] = sweeps("kfp18-local")
    assert sweep.max_trial_count == 3 and sweep.parallel_trial_count == 1
    assert sweep.trial_job_spec.base_output_directory.output_uri_prefix.startswith(
        "gs://kfp18-fixture/out"
    ), "base_output_directory's default from the compiled runtimeConfig"


def test_the_field_the_schema_does_not_bind_is_refused(sdk: emulator.Emulator) -> None:
    document = json.loads((FIXTURES / "gcpc_v1.json").read_text())
    client = pipeline_client("us-central1")
    job = pj.PipelineJob(
        display_name="kfp18-wrong-field",
        pipeline_spec=document["pipelineSpec"],
        runtime_config=pj.PipelineJob.RuntimeConfig(
            gcs_output_directory=ROOT, parameter_values={"display_name": "x"}
        ),
    )
    with pytest.raises(exceptions.InvalidArgument) as caught:
        client.create_pipeline_job(parent=PARENT, pipeline_job=job)
    assert "pipeline_job.runtime_config.parameter_values: display_name given" in str(caught.value)
    assert "schemaVersion 2.0.0" in str(caught.value)
    newer = pj.PipelineJob(
        display_name="kfp18-newer",
        pipeline_spec={**document["pipelineSpec"], "schemaVersion": "2.1.0"},
        runtime_config=pj.PipelineJob.RuntimeConfig(
            gcs_output_directory=ROOT, parameters={"display_name": {"string_value": "x"}}
        ),
    )
    with pytest.raises(exceptions.InvalidArgument, match="accepted: parameter_values"):
        client.create_pipeline_job(parent=PARENT, pipeline_job=newer)
    undeclared = pj.PipelineJob(
        display_name="kfp18-undeclared",
        pipeline_spec=document["pipelineSpec"],
        runtime_config=pj.PipelineJob.RuntimeConfig(
            gcs_output_directory=ROOT, parameters={"nope": {"string_value": "x"}}
        ),
    )
    with pytest.raises(exceptions.InvalidArgument) as caught:
        client.create_pipeline_job(parent=PARENT, pipeline_job=undeclared)
    assert "pipeline_job.runtime_config.parameters: nope not declared" in str(caught.value)


def test_gcpc_1_custom_training_job_op_fails_on_the_bools_its_payload_quotes(
    emu: emulator.Emulator,
) -> None:
    """GCPC 1.0.33's ``custom_job/component.yaml`` writes ``"restart_job_on_worker_restart":
    "{{...}}"`` (and ``enable_web_access``) quoted, so its payload holds the text ``"false"``,
    and its launcher (``container/v1/custom_job/remote_runner.py``, the same code in 1.0.33 and
    here) hands the parsed payload to ``JobServiceClient.create_custom_job``, whose proto-plus
    message refuses a string for a bool field (protobuf's own type check, pure-Python and upb
    alike). The emulator runs GCPC's launcher as it is, so the task fails as the launcher does,
    before any CustomJob is made."""
    before = list(job_client("us-central1").list_custom_jobs(parent=PARENT))
    pool = {
        "machine_spec": {"machine_type": "n1-standard-4"},
        "replica_count": 1,
        "container_spec": {"image_uri": "python:3.11", "command": [sys.executable, "-c", "1"]},
    }
    values = {"display_name": "kfp18-custom", "worker_pool_specs": json.dumps([pool])}
    result = run_local(FIXTURES / "custom_job_v1.json", values, emu.root)
    assert result.state == "FAILED"
    transcript = result.transcript.read_text()
    assert "Failed to initialize Scheduling" in transcript
    assert "'restart_job_on_worker_restart': 'false'" in transcript
    assert list(job_client("us-central1").list_custom_jobs(parent=PARENT)) == before
