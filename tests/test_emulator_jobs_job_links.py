"""A CustomJob that names an experiment and no run is given one (``jobs/job_links.py``).

"If 'experiment' is set but 'experiment_run` is not, an ExperimentRun resource will still be
auto-generated" (the Vertex AI SDK's ``CustomJob.run`` docstring), and its name is the job's
``job_spec.experiment_run`` ("{experiment-name}-{experiment-run-name}", custom_job.proto):
the SDK's ``CustomJob(...).run(experiment=...)`` over gRPC and REST, then the job read back and
``aiplatform.ExperimentRun.list(experiment=...)``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions
from google.cloud import aiplatform, storage
from google.cloud.aiplatform import jobs

from trainpool.testing import emulated_vertex

pytestmark = pytest.mark.timeout(180)
WHERE = {"project": "demo", "location": "us-central1"}
ACCOUNT = "trainer@demo.iam.gserviceaccount.com"


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with emulated_vertex(tmp_path_factory.mktemp("links") / "root", "demo") as running:
        storage.Client().create_bucket("links-bucket")
        yield running


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_job_with_only_an_experiment_gets_a_run_of_it(
    emu: Any, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs, "_JOB_WAIT_TIME", 0.2)
    experiment = f"exp-auto-{transport}"
    aiplatform.init(
        experiment=experiment,
        staging_bucket="gs://links-bucket",
        api_transport=transport,
        **WHERE,
    )
    pool = {
        "machine_spec": {"machine_type": "n1-standard-4"},
        "replica_count": 1,
        "container_spec": {"image_uri": "local/none", "command": [sys.executable, "-c", "0"]},
    }
    job = aiplatform.CustomJob(display_name="auto-run", worker_pool_specs=[pool])
    job.run(experiment=experiment, service_account=ACCOUNT)

    exp = aiplatform.Experiment(experiment)
    job_id = job.name
    run_name = f"{exp.resource_name}-{job_id}"
    assert job.job_spec.experiment_run == run_name
    got = aiplatform.CustomJob.get(job.resource_name)
    assert got.job_spec.experiment_run == run_name
    assert got.job_spec.experiment == exp.resource_name
    runs = aiplatform.ExperimentRun.list(experiment=experiment)
    assert [run.name for run in runs] == [job_id]
    assert runs[0].resource_name == run_name
    assert runs[0].get_state() == "COMPLETE"  # the SDK ends it with the job

    named = aiplatform.CustomJob(display_name="own-run", worker_pool_specs=[pool])
    aiplatform.start_run("mine")
    aiplatform.end_run()
    named.submit(experiment=experiment, experiment_run="mine", service_account=ACCOUNT)
    assert named.job_spec.experiment_run.endswith(f"/contexts/{experiment}-mine")
    assert sorted(run.name for run in aiplatform.ExperimentRun.list(experiment=experiment)) == [
        job_id,
        "mine",
    ]


def test_a_job_whose_run_cannot_be_made_is_not_created(tmp_path: Any) -> None:
    """The run is made with the job, or neither is: a Context already holding the run's id
    (``{experiment}-{job id}``) refuses the Create, and no job is left behind."""
    from google.cloud.aiplatform_v1.services.job_service import JobServiceClient
    from google.cloud.aiplatform_v1.services.metadata_service import MetadataServiceClient

    with emulated_vertex(tmp_path / "root", "demo"):
        parent = "projects/demo/locations/us-central1"
        metadata = MetadataServiceClient()
        metadata.create_metadata_store(parent=parent, metadata_store_id="default").result()
        store = f"{parent}/metadataStores/default"
        experiment = metadata.create_context(
            parent=store,
            context_id="exp-clash",
            context={"schema_title": "system.Experiment"},
        )
        metadata.create_context(parent=store, context_id="exp-clash-1000", context={})
        pool = {
            "machine_spec": {"machine_type": "n1-standard-4"},
            "replica_count": 1,
            "container_spec": {"image_uri": "local/none", "command": [sys.executable, "-c", "0"]},
        }
        jobs_client = JobServiceClient()
        with pytest.raises(exceptions.AlreadyExists):
            jobs_client.create_custom_job(
                parent=parent,
                custom_job={
                    "display_name": "clash",
                    "job_spec": {
                        "worker_pool_specs": [pool],
                        "experiment": experiment.name,
                        "service_account": ACCOUNT,
                    },
                },
            )
        assert list(jobs_client.list_custom_jobs(parent=parent)) == []
