"""The SDK's training-pipeline classes, unchanged, against the emulator over real gRPC.

``aiplatform.CustomContainerTrainingJob(...).run(replica_count=3, ...)`` is how Google's
notebooks launch multi-node training: a TrainingPipeline that runs a CustomJob and, with a
serving image, uploads a Model (trainpool/emulator/training_pipeline_service.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_image import HOST_IMAGE
from google.api_core import exceptions
from google.cloud import aiplatform
from google.cloud.aiplatform import initializer, training_jobs

from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(90)

# In the style of Google's samples: the chief writes the model to AIP_MODEL_DIR.
TRAINER = """
import json, os, sys
from trainpool.runtime.gcs import local_path
spec = json.loads(os.environ["CLUSTER_SPEC"])
task = spec["task"]
with open(os.path.join(sys.argv[1], f"{task['type']}-{task['index']}.json"), "w") as out:
    json.dump({"task": task, "model_dir": os.environ["AIP_MODEL_DIR"]}, out)
if task["type"] == "workerpool0":
    model_dir = local_path(os.environ["AIP_MODEL_DIR"])
    os.makedirs(model_dir, exist_ok=True)
    open(os.path.join(model_dir, "model.txt"), "w").write("weights")
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 and task["type"] == "workerpool1" else 0)
"""


@pytest.fixture
def sdk(tmp_path: Path, sdk_emulator: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The SDK as a notebook calls it, against a fresh emulator (``sdk_emulator``)."""
    monkeypatch.setattr(training_jobs, "_JOB_WAIT_TIME", 0.2)
    (tmp_path / "trainer.py").write_text(TRAINER)
    (tmp_path / "out").mkdir()
    return tmp_path


def training_job(tmp_path: Path, *args: str, **kwargs: Any) -> Any:
    return aiplatform.CustomContainerTrainingJob(
        display_name="notebook-style",
        container_uri=HOST_IMAGE,
        command=[sys.executable, str(tmp_path / "trainer.py"), str(tmp_path / "out"), *args],
        project="demo",
        location="us-central1",
        staging_bucket="gs://bkt/staging",
        **kwargs,
    )


def test_custom_container_training_job_runs_every_replica_and_uploads_the_model(
    sdk: Path,
) -> None:
    job = training_job(sdk, model_serving_container_image_uri="local/serve")
    model = job.run(
        replica_count=3,
        machine_type="n1-standard-4",
        base_output_dir="gs://bkt/run",
        model_display_name="trained",
    )
    assert job.state.name == "PIPELINE_STATE_SUCCEEDED"
    records = {p.stem: json.loads(p.read_text()) for p in (sdk / "out").glob("*.json")}
    assert sorted(records) == ["workerpool0-0", "workerpool1-0", "workerpool1-1"]
    assert {r["model_dir"] for r in records.values()} == {"gs://bkt/run/model/"}
    assert (sdk / "root/gcs/bkt/run/model/model.txt").read_text() == "weights"
    assert model is not None
    assert model.display_name == "trained"
    assert model.uri == "gs://bkt/run/model"
    assert model.resource_name.startswith("projects/demo/locations/us-central1/models/")
    backing = job.gca_resource.training_task_metadata["backingCustomJob"]
    custom_job = job_client("us-central1").get_custom_job(name=backing)
    assert custom_job.state.name == "JOB_STATE_SUCCEEDED"
    assert [p.replica_count for p in custom_job.job_spec.worker_pool_specs] == [1, 2]
    assert [p.display_name for p in aiplatform.Model.list(project="demo")] == ["trained"]


def test_a_failed_backing_job_fails_the_pipeline_with_its_error(sdk: Path) -> None:
    job = training_job(sdk, "1")
    with pytest.raises(RuntimeError, match="exited with a non-zero status of 1"):
        job.run(replica_count=2, machine_type="n1-standard-4", base_output_dir="gs://bkt/f")
    assert job.state.name == "PIPELINE_STATE_FAILED"


def test_an_unknown_task_definition_is_refused_naming_the_field(sdk: Path) -> None:
    client = aiplatform.gapic.PipelineServiceClient(
        client_options={"api_endpoint": "unused"},
        credentials=initializer.global_config.credentials,
    )
    pipeline = {
        "display_name": "automl",
        "training_task_definition": "gs://google-cloud-aiplatform/schema/trainingjob/"
        "definition/automl_tabular_1.0.0.yaml",
        "training_task_inputs": {},
    }
    with pytest.raises(exceptions.InvalidArgument, match="training_task_definition"):
        client.create_training_pipeline(
            parent="projects/demo/locations/us-central1", training_pipeline=pipeline
        )


def test_a_training_job_uploads_a_new_version_of_its_parent_model(sdk: Path) -> None:
    """``run(parent_model=..., is_default_version=False, model_version_aliases=[...])``: the
    pipeline's model is the next version of that Model (TrainingPipeline.parent_model)."""
    first = aiplatform.Model.upload(
        display_name="nightly", artifact_uri="gs://bkt/v1", serving_container_image_uri="s"
    )
    job = training_job(sdk, model_serving_container_image_uri="local/serve")
    model = job.run(
        replica_count=1,
        machine_type="n1-standard-4",
        base_output_dir="gs://bkt/v2run",
        model_display_name="nightly",
        parent_model=first.resource_name,
        is_default_version=False,
        model_version_aliases=["challenger"],
    )
    assert model is not None
    assert (model.resource_name, model.version_id) == (first.resource_name, "2")
    assert list(model.version_aliases) == ["challenger"]
    assert aiplatform.Model(first.resource_name).version_id == "1"
    with pytest.raises(exceptions.NotFound, match="no-such"):
        training_job(sdk, model_serving_container_image_uri="local/serve").run(
            replica_count=1,
            machine_type="n1-standard-4",
            base_output_dir="gs://bkt/v3run",
            parent_model="projects/demo/locations/us-central1/models/no-such",
        )
