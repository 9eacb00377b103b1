"""PipelineService's calls as the aiplatform SDK makes them: List with filters and order,
BatchCancel, BatchDelete (Delete: tests/test_emulator_pipeline_jobs_runs.py).

What is asserted is what ``pipeline_service.proto`` (aiplatform v1) documents:
ListPipelineJobsRequest.filter (``pipeline_name``, ``display_name`` with ``:`` wildcards,
``state``, the times with ``<``/``>``, ``labels``, ``AND``/``OR``) and ``order_by`` ("if
order_by is not specified, it will order by default order is create time in descending
order"); BatchDelete "is atomic. If it fails, none of the PipelineJobs are deleted";
BatchCancel skips "the jobs that are already terminated"; both take "A maximum of 32".
The notebooks' cleanup cell lists as ``PipelineJob.list(filter=f"display_name={NAME}",
order_by="create_time")`` (vertex-ai-samples notebooks/official/pipelines/
control_flow_kfp.ipynb).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fixtures.pipelines import compile_fixture
from fixtures.vertex import PARENT, fresh_pipeline_sdk
from google.api_core import exceptions
from google.cloud import aiplatform

import trainpool.emulator as emulator
from trainpool.testing import emulated_vertex
from trainpool.vertex import clients

pytestmark = pytest.mark.timeout(300)
WHERE = {"project": "demo", "location": "us-central1"}


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulator.Emulator]:
    with emulated_vertex(tmp_path_factory.mktemp("service") / "root", "demo") as running:
        yield running


@pytest.fixture
def sdk(emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch) -> emulator.Emulator:
    fresh_pipeline_sdk(monkeypatch)
    return emu


def submit(name: str, fixture: str, tmp_path: Path, **params: object) -> aiplatform.PipelineJob:
    job = aiplatform.PipelineJob(
        display_name=name,
        template_path=str(compile_fixture(fixture, tmp_path)),
        pipeline_root="gs://demo-root/service",
        parameter_values=params,
        enable_caching=False,
        labels={"suite": "service"},
        job_id=name,  # the SDK's default, <pipeline>-<second>, repeats within a second
        **WHERE,
    )
    job.submit()
    return job


def until_done(*jobs: aiplatform.PipelineJob) -> None:
    deadline = time.monotonic() + 120
    while not all(job.done() for job in jobs):
        assert time.monotonic() < deadline
        time.sleep(0.2)


def names(jobs: list[aiplatform.PipelineJob]) -> list[str]:
    return [job.display_name for job in jobs]


def test_list_filters_and_orders_as_the_sdk_asks(sdk: emulator.Emulator, tmp_path: Path) -> None:
    made = [submit(name, "echo_command", tmp_path) for name in ("list-a", "list-b", "list-c")]
    until_done(*made)
    a, b, c = (aiplatform.PipelineJob.get(job.resource_name, **WHERE) for job in made)
    mine = 'labels.suite="service" AND display_name:"list-*"'
    # the SDK sorts an order_by itself (base.py _list_with_local_order); without one the
    # list is the API's, newest first
    newest_first = ["list-c", "list-b", "list-a"]
    assert names(aiplatform.PipelineJob.list(filter=mine, **WHERE)) == newest_first
    client = clients.pipeline_client("us-central1")

    def ordered(order_by: str) -> list[str]:
        request = {"parent": PARENT, "filter": mine, "order_by": order_by}
        return [job.display_name for job in client.list_pipeline_jobs(request=request)]

    assert ordered("create_time") == ["list-a", "list-b", "list-c"]
    assert ordered("create_time desc, end_time") == newest_first
    ended = sorted((a, b, c), key=lambda job: job.gca_resource.end_time, reverse=True)
    assert ordered("end_time desc") == names(ended)
    assert names(aiplatform.PipelineJob.list(filter="display_name=list-b", **WHERE)) == ["list-b"]
    after_b = f'{mine} AND create_time>"{b.create_time.isoformat()}"'
    assert names(aiplatform.PipelineJob.list(filter=after_b, **WHERE)) == ["list-c"]
    either = f'{mine} AND (display_name="list-a" OR display_name="list-c")'.replace("(", "")
    either = either.replace(")", "")
    assert names(aiplatform.PipelineJob.list(filter=either, **WHERE)) == ["list-c", "list-a"]
    by_pipeline = f'{mine} AND pipeline_name="echo-command"'
    assert len(aiplatform.PipelineJob.list(filter=by_pipeline, **WHERE)) == 3
    assert aiplatform.PipelineJob.list(filter=f'{mine} AND pipeline_name="other"', **WHERE) == []
    done = f'{mine} AND state="PIPELINE_STATE_SUCCEEDED"'
    assert len(aiplatform.PipelineJob.list(filter=done, **WHERE)) == 3
    pages = client.list_pipeline_jobs(
        request={"parent": PARENT, "filter": mine, "order_by": "create_time", "page_size": 1}
    )
    assert [job.display_name for page in pages.pages for job in page.pipeline_jobs] == [
        "list-a",
        "list-b",
        "list-c",
    ]
    with pytest.raises(exceptions.InvalidArgument, match="filter: .*create_time>"):
        aiplatform.PipelineJob.list(filter='create_time>"yesterday"', **WHERE)
    with pytest.raises(exceptions.InvalidArgument, match="order_by: 'name'"):
        ordered("name")
    assert c.create_time > b.create_time > a.create_time


def test_batch_cancel_skips_ended_jobs_and_batch_delete_is_atomic(
    sdk: emulator.Emulator, tmp_path: Path
) -> None:
    ended = submit("batch-ended", "echo_command", tmp_path)
    until_done(ended)
    running = [
        submit(f"batch-running-{n}", "cancellable", tmp_path, seconds=120.0, started=f"/tmp/{n}")
        for n in (1, 2)
    ]
    names_ = [job.resource_name for job in (*running, ended)]
    with pytest.raises(exceptions.FailedPrecondition, match="names\\[0\\]"):
        ended.batch_delete(names=names_, **WHERE)
    assert all(aiplatform.PipelineJob.get(name, **WHERE) for name in names_)  # none deleted
    cancelled = ended.batch_cancel(names=names_, **WHERE).result()
    assert sorted(job.name for job in cancelled.pipeline_jobs) == sorted(
        job.resource_name for job in running
    )
    until_done(*running)
    assert {job.state.name for job in running} == {"PIPELINE_STATE_CANCELLED"}
    deleted = ended.batch_delete(names=names_, **WHERE)
    assert sorted(job.name for job in deleted.pipeline_jobs) == sorted(names_)
    for name in names_:
        with pytest.raises(exceptions.NotFound):
            aiplatform.PipelineJob.get(name, **WHERE)
    with pytest.raises(exceptions.InvalidArgument, match="33 names; accepted: 1 to 32"):
        ended.batch_delete(names=[f"{PARENT}/pipelineJobs/x{n}" for n in range(33)], **WHERE)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_pipeline_job_without_a_service_account_gets_the_default_compute_one(
    sdk: emulator.Emulator, tmp_path: Path, transport: str
) -> None:
    """``PipelineJob.service_account``: "If not specified, the Compute Engine default service
    account in the project will be used" (pipeline_job.proto), PROJECT_NUMBER-compute@...;
    the project number is 0 here (``api/resource_manager.py``). Vertex also labels every run
    ``vertex-ai-pipelines-run-billing-id`` with a number (the SDK reads it back as an int)."""
    aiplatform.init(api_transport=transport)
    job = submit(f"default-sa-{transport}", "echo_command", tmp_path)
    account = "0-compute@developer.gserviceaccount.com"
    assert job.gca_resource.service_account == account
    assert int(job.gca_resource.labels["vertex-ai-pipelines-run-billing-id"]) > 0
    assert job.gca_resource.labels["suite"] == "service"
    got = aiplatform.PipelineJob.get(job.resource_name, **WHERE)
    assert got.gca_resource.service_account == account
    listed = clients.pipeline_client(WHERE["location"]).list_pipeline_jobs(
        request={
            "parent": PARENT,
            "filter": f'display_name="default-sa-{transport}"',
            "read_mask": {"paths": ["name", "service_account"]},
        }
    )
    assert [(j.name, j.service_account) for j in listed] == [(job.resource_name, account)]
    named = aiplatform.PipelineJob(
        display_name=f"own-sa-{transport}",
        template_path=str(compile_fixture("echo_command", tmp_path)),
        pipeline_root="gs://demo-root/service",
        enable_caching=False,
        job_id=f"own-sa-{transport}",
        **WHERE,
    )
    named.submit(service_account="runner@demo.iam.gserviceaccount.com")
    assert named.gca_resource.service_account == "runner@demo.iam.gserviceaccount.com"
    until_done(job, named)


@pytest.mark.parametrize(
    ("job_id", "accepted"),
    [
        ("a", True),
        ("run-1", True),
        ("a" * 128, True),
        ("1run", False),  # the first character is a letter ([a-z][-a-z0-9]{0,127})
        ("-run", False),
        ("run_1", False),
        ("Run", False),
        ("a" * 129, False),
    ],
)
def test_a_pipeline_job_id_follows_vertexs_rule(
    sdk: emulator.Emulator, tmp_path: Path, job_id: str, accepted: bool
) -> None:
    """``[a-z][-a-z0-9]{0,127}``: the Vertex AI SDK's ``_VALID_NAME_PATTERN``
    (``constants/pipeline.py``); CreatePipelineJobRequest.pipeline_job_id: "less than 128
    characters, and valid characters are /[a-z][0-9]-/". Asked with the raw client (the SDK
    checks job_id itself before it sends it)."""
    from google.cloud.aiplatform_v1.types import pipeline_job as pj
    from google.protobuf import json_format

    spec = yaml.safe_load(compile_fixture("echo_command", tmp_path).read_text())
    job = pj.PipelineJob(
        display_name="id-rule",
        runtime_config={"gcs_output_directory": "gs://demo-root/ids"},
    )
    json_format.ParseDict(spec, pj.PipelineJob.pb(job).pipeline_spec)
    client = clients.pipeline_client(WHERE["location"])
    if accepted:
        made = client.create_pipeline_job(parent=PARENT, pipeline_job=job, pipeline_job_id=job_id)
        assert made.name == f"{PARENT}/pipelineJobs/{job_id}"
        client.cancel_pipeline_job(name=made.name)
    else:
        with pytest.raises(exceptions.InvalidArgument) as err:
            client.create_pipeline_job(parent=PARENT, pipeline_job=job, pipeline_job_id=job_id)
        assert f"pipeline_job_id: '{job_id[:20]}" in str(err.value)
        assert "accepted: up to 128 lowercase letters, digits and '-', starting with a letter" in (
            str(err.value)
        )
