"""PipelineJobs of Google-style pipelines (fixtures/pipelines/google_style.py), submitted with the
official ``google-cloud-aiplatform`` SDK over real gRPC, run on the emulator as Vertex runs them.

Each test is a notebook's pattern: an importer of a ``gs://`` object read through ``.path``,
a second identical run served from the cache, a cancelled run, ``ParallelFor`` with
``parallelism=2`` and ``Collected``, ``If``/``Else`` on a metric, an ``ExitHandler`` whose
cleanup sees the final status, ``set_retry``, task settings in a nested pipeline. What is
asserted is what Vertex reports: ``PipelineTaskDetail`` states (aiplatform v1
``pipeline_job.proto``: ``SKIPPED`` "due to cache hit", ``NOT_TRIGGERED`` "the task's
trigger policy is not satisfied"), artifact URIs under the pipeline root
(``{job_id}/{task_id}/{output_key}``, ``RuntimeConfig.gcs_output_directory``), ``/gcs`` in
every task (https://cloud.google.com/vertex-ai/docs/pipelines/build-pipeline: "Cloud
Storage FUSE ... at /gcs"; https://cloud.google.com/vertex-ai/docs/training/cloud-storage-file-system).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.pipelines import compile_fixture
from fixtures.vertex import fresh_pipeline_sdk
from google.api_core import exceptions
from google.cloud import aiplatform, storage

import trainpool.emulator as emulator
from trainpool.testing import emulated_vertex
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(300)
WHERE = {"project": "demo", "location": "us-central1"}
ROOT = "gs://demo-root/runs"


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulator.Emulator]:
    """An emulator and this process's Google clients pointed at it, as ``trainpool exec``
    points a user's (trainpool.testing)."""
    with emulated_vertex(tmp_path_factory.mktemp("pipelines") / "root", "demo") as running:
        yield running


@pytest.fixture
def sdk(emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch) -> emulator.Emulator:
    fresh_pipeline_sdk(monkeypatch)
    return emu


def bucket(name: str) -> storage.Bucket:
    client = storage.Client(project="demo")
    found = client.lookup_bucket(name)
    return found if found is not None else client.create_bucket(name)


def submit(
    name: str, tmp_path: Path, enable_caching: bool | None = False, **params: Any
) -> aiplatform.PipelineJob:
    job = aiplatform.PipelineJob(
        display_name=name,
        template_path=str(compile_fixture(name, tmp_path)),
        pipeline_root=ROOT,
        parameter_values=params,
        enable_caching=enable_caching,
        **WHERE,
    )
    job.submit()
    return job


def run(
    name: str, tmp_path: Path, enable_caching: bool | None = False, **params: Any
) -> aiplatform.PipelineJob:
    job = submit(name, tmp_path, enable_caching, **params)
    try:
        job.wait()
    except RuntimeError:  # the SDK raises for a job that FAILED; the test looks at it
        pass
    return job


def tasks(job: aiplatform.PipelineJob) -> dict[str, Any]:
    """The job's task details by task name (the root task left out)."""
    return {t.task_name: t for t in job.task_details if t.task_name != job.name}


def states(job: aiplatform.PipelineJob) -> dict[str, str]:
    return {name: task.state.name for name, task in tasks(job).items()}


def output(job: aiplatform.PipelineJob, task: str, name: str = "Output") -> Any:
    return tasks(job)[task].execution.metadata[f"output:{name}"]


def run_files(emu: emulator.Emulator, job: aiplatform.PipelineJob) -> Path:
    return emu.root / "pipelines" / job.name / "run"


def test_an_importer_of_a_gs_object_is_read_at_gcs_and_writes_under_gcs_reach_the_bucket(
    sdk: emulator.Emulator, tmp_path: Path
) -> None:
    data = bucket("demo-data")
    data.blob("hello.txt").upload_from_string("hello from the bucket")
    host_gcs = sorted(os.listdir("/gcs")) if os.path.isdir("/gcs") else None
    job = run("importer_gcs", tmp_path)
    assert job.state.name == "PIPELINE_STATE_SUCCEEDED", states(job)
    assert output(job, "read-text") == "hello from the bucket"
    written = json.loads(output(job, "write-upper"))
    task_id = tasks(job)["write-upper"].task_id
    # <pipeline root>/<project number>/<job id>/<task>_<task id>/<output>, .path under /gcs
    assert written == {
        "uri": f"{ROOT}/0/{job.name}/write-upper_{task_id}/copy",
        "path": f"/gcs/demo-root/runs/0/{job.name}/write-upper_{task_id}/copy",
    }
    [copy] = tasks(job)["write-upper"].outputs["copy"].artifacts
    assert copy.uri == written["uri"]
    assert data.blob("out/upper.txt").download_as_text() == "HELLO FROM THE BUCKET"
    assert bucket("demo-root").blob(written["uri"][len("gs://demo-root/") :]).exists()
    # nothing reached the host's own /gcs
    assert (sorted(os.listdir("/gcs")) if os.path.isdir("/gcs") else None) == host_gcs


def test_a_second_identical_run_is_served_from_the_cache(
    sdk: emulator.Emulator, tmp_path: Path
) -> None:
    data = bucket("demo-data")
    data.blob("tally.txt").upload_from_string("")
    first = run("cached_twice", tmp_path, enable_caching=None)
    assert states(first) == {"count-run": "SUCCEEDED", "count-run-2": "SUCCEEDED"} | {
        "read-shouted": "SUCCEEDED"
    }
    second = run("cached_twice", tmp_path, enable_caching=None)
    assert second.state.name == "PIPELINE_STATE_SUCCEEDED"
    # count-run and read-shouted: the same interface as in the first run; count-run-2 has
    # set_caching_options(False)
    assert states(second) == {
        "count-run": "SKIPPED",
        "count-run-2": "SUCCEEDED",
        "read-shouted": "SKIPPED",
    }
    cached = tasks(second)["count-run"]
    assert cached.execution.state.name == "CACHED"
    assert [a.uri for a in cached.outputs["shouted"].artifacts] == [
        a.uri for a in tasks(first)["count-run"].outputs["shouted"].artifacts
    ]
    assert output(second, "read-shouted") == output(first, "read-shouted") == "HELLO!"
    assert data.blob("tally.txt").download_as_text() == "ran\n" * 3
    uncached = run("cached_twice", tmp_path, enable_caching=False)
    assert set(states(uncached).values()) == {"SUCCEEDED"}
    other = run("cached_twice", tmp_path, enable_caching=None, message="another")
    assert states(other)["count-run"] == "SUCCEEDED"  # another input, another key
    assert data.blob("tally.txt").download_as_text() == "ran\n" * 7


def test_a_cancelled_run_ends_its_running_task_cancelled_and_starts_no_other(
    sdk: emulator.Emulator, tmp_path: Path
) -> None:
    started = sdk.root / "gcs" / "demo-data" / "started"
    bucket("demo-data")
    started.unlink(missing_ok=True)
    job = submit("cancellable", tmp_path)
    deadline = time.monotonic() + 120
    while not started.exists():
        assert time.monotonic() < deadline, states(job)
        time.sleep(0.1)
    job.cancel()
    deadline = time.monotonic() + 60
    while not job.done():
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert job.state.name == "PIPELINE_STATE_CANCELLED"
    assert states(job) == {"slow": "CANCELLED"}
    assert tasks(job)["slow"].execution.state.name == "CANCELLED"


def test_a_cancelled_run_cancels_its_tasks_job(sdk: emulator.Emulator, tmp_path: Path) -> None:
    job = submit("with_job", tmp_path, project="demo", message="cancel me", sleep_s=300.0)
    jobs = job_client("us-central1")
    deadline = time.monotonic() + 120
    while not list(jobs.list_custom_jobs(parent="projects/demo/locations/us-central1")):
        assert time.monotonic() < deadline, states(job)
        time.sleep(0.2)
    [custom] = jobs.list_custom_jobs(parent="projects/demo/locations/us-central1")
    while jobs.get_custom_job(name=custom.name).state.name != "JOB_STATE_RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    job.cancel()
    while not job.done():
        assert time.monotonic() < deadline + 60
        time.sleep(0.2)
    assert job.state.name == "PIPELINE_STATE_CANCELLED"
    assert states(job) == {"train": "CANCELLED"}
    assert jobs.get_custom_job(name=custom.name).state.name == "JOB_STATE_CANCELLED"


def test_parallel_for_runs_two_at_a_time_and_collects_every_output(
    sdk: emulator.Emulator, tmp_path: Path
) -> None:
    job = run("fan_out", tmp_path, xs=[1, 2, 3, 4], spans="/gcs/demo-data/spans")
    assert job.state.name == "PIPELINE_STATE_SUCCEEDED", states(job)
    assert output(job, "total") == 30
    assert (
        sorted(t.task_name for t in job.task_details if t.task_name == "square") == ["square"] * 4
    )
    spans = [
        tuple(map(float, (sdk.root / "gcs" / "demo-data" / "spans" / str(x)).read_text().split()))
        for x in (1, 2, 3, 4)
    ]
    at_once = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert at_once == 2  # parallelism=2: two ran together, never three


@pytest.mark.parametrize(
    ("accuracy", "ran", "not_triggered"),
    [(0.9, "deploy", "not-good-enough"), (0.5, "keep-current", "good-enough")],
)
def test_if_else_on_a_metric_runs_one_branch(
    sdk: emulator.Emulator, tmp_path: Path, accuracy: float, ran: str, not_triggered: str
) -> None:
    job = run("gate_on_metric", tmp_path, accuracy=accuracy)
    assert job.state.name == "PIPELINE_STATE_SUCCEEDED", states(job)
    branches = job.pipeline_spec["components"]["comp-condition-branches-1"]["dag"]["tasks"]
    key = {task["taskInfo"]["name"]: key for key, task in branches.items()}[not_triggered]
    found = states(job)
    assert found[ran] == "SUCCEEDED"
    assert found[key] == "NOT_TRIGGERED"  # the branch's condition (a DAG task), by its key
    assert ({"deploy", "keep-current"} - {ran}) & set(found) == set()


@pytest.mark.parametrize(("fail", "final"), [(True, "FAILED"), (False, "SUCCEEDED")])
def test_an_exit_handler_cleanup_sees_the_final_status(
    sdk: emulator.Emulator, tmp_path: Path, fail: bool, final: str
) -> None:
    report = sdk.root / "gcs" / "demo-data" / "final.json"
    bucket("demo-data")
    job = run("exit_handler", tmp_path, fail=fail)
    assert job.state.name == f"PIPELINE_STATE_{final}"
    assert states(job)["work"] == final
    assert states(job)["cleanup"] == "SUCCEEDED"
    seen = json.loads(report.read_text())
    assert seen["state"] == final
    assert seen["job"] == job.resource_name  # PipelineTaskFinalStatus names the PipelineJob


def test_a_task_with_set_retry_that_fails_once_succeeds(
    sdk: emulator.Emulator, tmp_path: Path
) -> None:
    bucket("demo-data")
    (sdk.root / "gcs" / "demo-data" / "flaky").unlink(missing_ok=True)
    job = run("retried", tmp_path)
    assert job.state.name == "PIPELINE_STATE_SUCCEEDED", states(job)
    flaky = tasks(job)["flaky"]
    assert flaky.state.name == "SUCCEEDED"
    history = [(s.state.name, s.error.message) for s in flaky.pipeline_task_status]
    assert history == [
        ("RUNNING", ""),
        ("RUNNING", "attempt 1 of 2 exited with status 1; retried (set_retry)"),
        ("SUCCEEDED", ""),
    ]
    assert output(job, "flaky") == "second attempt"


def test_task_settings_in_a_nested_pipeline(sdk: emulator.Emulator, tmp_path: Path) -> None:
    job = run("settings", tmp_path)
    assert job.state.name == "PIPELINE_STATE_SUCCEEDED", states(job)
    assert output(job, "greeting") == "hello from the inner pipeline"  # set_env_variable
    task = tasks(job)["greeting"]
    log = (run_files(sdk, job) / "tasks" / f"greeting_{task.task_id}" / "task.log").read_text()
    assert "set_cpu_limit('2') not applied locally" in log
    assert "set_memory_limit('4G') not applied locally" in log
    assert "set_accelerator_type('NVIDIA_TESLA_T4') x 1 not applied locally" in log


def test_delete_removes_an_ended_job_and_refuses_a_running_one(
    sdk: emulator.Emulator, tmp_path: Path
) -> None:
    """The last cell of pipelines_intro_kfp.ipynb: ``job.delete()``."""
    bucket("demo-data")
    ended = run("echo_command", tmp_path)
    running = submit("cancellable", tmp_path, seconds=60.0)
    with pytest.raises(exceptions.FailedPrecondition, match="cancel it and wait"):
        running.delete()
    ended.delete()
    with pytest.raises(exceptions.NotFound):
        aiplatform.PipelineJob.get(ended.resource_name, **WHERE)
    assert not (sdk.root / "pipelines" / ended.name).exists()
    running.cancel()
