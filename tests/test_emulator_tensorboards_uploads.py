"""A CustomJob's TensorBoard logs reach its Tensorboard, as Vertex's uploader brings them.

``CustomJob.run(tensorboard=..., service_account=...)`` with a trainer that writes an event
file to ``AIP_TENSORBOARD_LOG_DIR`` (TensorBoard's own writer): once the job has ended, the
TensorboardExperiment named after the job's id (the SDK's ``console_utils.py`` links
``{tensorboard}/experiments/{custom job id}``) has the run ``default`` (the uploader's name
for the log folder itself, ``uploader_utils.DEFAULT_RUN_NAME``) with every scalar written.
Vertex's checks (https://cloud.google.com/vertex-ai/docs/experiments/tensorboard-setup:
"the following resources must be in same region: ... Vertex AI training job, Vertex AI
TensorBoard instance"; kubeflow/pipelines#7123: the service account): a Tensorboard of
another region, or one that does not exist, is refused naming the field.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_image import host_image
from google.api_core import exceptions
from google.cloud import aiplatform, storage

from trainpool.testing import emulated_vertex

pytestmark = pytest.mark.timeout(180)
PROJECT = "demo"
ACCOUNT = "trainer@demo.iam.gserviceaccount.com"
WRITER = textwrap.dedent(
    """
    import os, time
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    logdir = os.environ["AIP_TENSORBOARD_LOG_DIR"].replace("gs://", "/gcs/", 1)
    if not os.path.isdir("/gcs"):
        logdir = os.environ["AIP_TENSORBOARD_LOG_DIR"].replace(
            "gs://", os.environ["TRAINPOOL_GCS_ROOT"] + "/", 1)
    writer = EventFileWriter(logdir)
    for step in range(4):
        value = summary_pb2.Summary.Value(tag="loss", simple_value=1.0 / (step + 1))
        writer.add_event(event_pb2.Event(
            wall_time=time.time(), step=step, summary=summary_pb2.Summary(value=[value])))
    writer.close()
    """
)


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with emulated_vertex(tmp_path_factory.mktemp("tb") / "root", PROJECT) as running:
        storage.Client().create_bucket("tb-bucket")
        aiplatform.init(
            project=PROJECT,
            location="us-central1",
            staging_bucket="gs://tb-bucket",
            api_transport="grpc",
        )
        yield running


def job(image: str) -> Any:
    pool = {
        "machine_spec": {"machine_type": "n1-standard-4"},
        "replica_count": 1,
        "container_spec": {"image_uri": image, "command": ["python3", "-c", WRITER]},
    }
    return aiplatform.CustomJob(display_name="tb", worker_pool_specs=[pool])


def test_the_jobs_event_files_reach_its_tensorboard(emu: Any) -> None:
    board = aiplatform.Tensorboard.create(display_name="board")
    trained = job(host_image(emu.root))
    trained.run(tensorboard=board.resource_name, service_account=ACCOUNT)
    runs = aiplatform.TensorboardRun.list(
        tensorboard_experiment_name=trained.name, tensorboard_id=board.name
    )
    assert [r.resource_name.rsplit("/", 1)[1] for r in runs] == ["default"]
    data = runs[0].read_time_series_data()
    assert [(p.step, round(p.scalar.value, 4)) for p in data["loss"].values] == [
        (0, 1.0),
        (1, 0.5),
        (2, 0.3333),
        (3, 0.25),
    ]
    log = (Path(emu.root) / "jobs" / trained.name / "job.log").read_text()
    assert "the TensorBoard uploader uploaded the job's logs and ended" in log


def test_a_tensorboard_vertex_would_refuse_is_refused(emu: Any) -> None:
    board = aiplatform.Tensorboard.create(display_name="elsewhere", location="europe-west4")
    with pytest.raises(exceptions.BadRequest) as err:
        job("python:3.11").submit(tensorboard=board.resource_name, service_account=ACCOUNT)
    assert "custom_job.job_spec.tensorboard: " in err.value.message
    assert "is in europe-west4, the job in us-central1" in err.value.message
    missing = "projects/demo/locations/us-central1/tensorboards/999"
    with pytest.raises(exceptions.BadRequest) as err:
        job("python:3.11").submit(tensorboard=missing, service_account=ACCOUNT)
    assert f"'{missing}' does not exist" in err.value.message
