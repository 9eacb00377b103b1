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
from fixtures.pipelines import compile_fixture
from fixtures.vertex import PARENT
from google.api_core import exceptions
from google.cloud import aiplatform
from google.cloud.aiplatform import initializer, pipeline_jobs

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
    for setting in ("_api_transport", "_api_endpoint", "_credentials", "_project"):
        monkeypatch.setattr(initializer.global_config, setting, None)
    monkeypatch.setattr(pipeline_jobs, "_JOB_WAIT_TIME", 0.2)
    monkeypatch.setattr(pipeline_jobs, "_WAIT_TIME_MULTIPLIER", 1)
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
