"""A trainer that calls the Vertex AI SDK from inside its job reaches the emulator, unchanged.

A 2-replica CustomJob attached to an experiment run (``CustomJob.run(experiment=...,
experiment_run=..., service_account=...)``, the SDK over gRPC and over REST), each replica
running ``tests/fixtures/experiments/trainer.py`` in a local image with the SDK installed:
every replica records a run of its own, the primary one the attached run's metrics, with
no project, credentials or experiment given in the code (``AIP_EXPERIMENT_NAME``,
``AIP_EXPERIMENT_RUN_NAME``: what the SDK's experiment tracker reads,
``metadata/constants.py``). Vertex requires a service account with an experiment (the SDK's
``CustomJob.run`` docstring); the emulator refuses a run of another experiment.
"""

from __future__ import annotations

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
LOCATION = "us-central1"
TRAINER = Path(__file__).parent / "fixtures" / "experiments" / "trainer.py"
ACCOUNT = "trainer@demo.iam.gserviceaccount.com"


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with emulated_vertex(tmp_path_factory.mktemp("access") / "root", PROJECT) as running:
        storage.Client().create_bucket("access-bucket")
        yield running


def pools(image: str) -> list[dict[str, Any]]:
    pool = {
        "machine_spec": {"machine_type": "n1-standard-4"},
        "replica_count": 1,
        "container_spec": {"image_uri": image, "command": ["python3", str(TRAINER)]},
    }
    return [pool, pool]


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_two_replica_trainer_logs_to_the_experiment_run_its_job_is_attached_to(
    emu: Any, transport: str
) -> None:
    experiment = f"exp-job-{transport}"
    aiplatform.init(
        project=PROJECT,
        location=LOCATION,
        experiment=experiment,
        staging_bucket="gs://access-bucket",
        api_transport=transport,
    )
    aiplatform.start_run("attached")
    aiplatform.end_run()
    job = aiplatform.CustomJob(display_name="logs", worker_pool_specs=pools(host_image(emu.root)))
    job.run(experiment=experiment, experiment_run="attached", service_account=ACCOUNT)

    rows = aiplatform.get_experiment_df().to_dict("records")
    found = {row["run_name"]: row for row in rows}
    assert sorted(found) == ["attached", "replica-pool0-0", "replica-pool1-0"]
    assert aiplatform.ExperimentRun("attached", experiment=experiment).get_metrics() == {
        "accuracy": 0.93
    }
    assert found["attached"]["state"] == "COMPLETE"  # the SDK ends it with the job
    for name, rank in (("replica-pool0-0", 0.0), ("replica-pool1-0", 1.0)):
        run = aiplatform.ExperimentRun(name, experiment=experiment)
        assert run.get_metrics() == {"rank": rank}
        assert run.get_params()["world"] == 2
    log = (Path(emu.root) / "jobs" / job.name / "job.log").read_text()
    assert "each replica reaches this emulator's Vertex AI API" in log


def test_an_experiment_needs_a_service_account_and_a_run_of_its_own(emu: Any) -> None:
    aiplatform.init(
        project=PROJECT, location=LOCATION, experiment="exp-rules", api_transport="grpc"
    )
    aiplatform.start_run("mine")
    aiplatform.end_run()
    aiplatform.init(experiment="exp-other")
    aiplatform.start_run("theirs")
    aiplatform.end_run()
    job = aiplatform.CustomJob(
        display_name="rules",
        worker_pool_specs=pools("python:3.11")[:1],
        staging_bucket="gs://access-bucket",
    )
    with pytest.raises(exceptions.BadRequest) as err:
        job.submit(experiment="exp-rules", experiment_run="mine")
    assert "custom_job.job_spec.service_account: must be specified with an experiment" in str(
        err.value
    )
    with pytest.raises(exceptions.BadRequest) as err:
        job.submit(
            experiment="exp-rules",
            experiment_run=aiplatform.ExperimentRun("theirs", experiment="exp-other"),
            service_account=ACCOUNT,
        )
    assert "experiment_run: " in str(err.value) and "is not a run of" in str(err.value)
