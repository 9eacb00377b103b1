"""JobService over real gRPC with the official gapic client: Create, Get, List, Cancel, Delete."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from google.api_core import exceptions
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(60)

MACHINE = {"machine_type": "n1-standard-4"}


def job(code: str, display_name: str = "demo", **labels: str) -> dict[str, Any]:
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": "local/none", "command": [sys.executable, "-c", code]},
    }
    spec = {"worker_pool_specs": [pool]}
    return {"display_name": display_name, "labels": labels, "job_spec": spec}


def wait(client: Any, name: str, timeout: float = 20.0) -> Any:
    return wait_job(client.get_custom_job, name, timeout)


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with emulator.start(tmp_path) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        yield job_client("us-central1")


def test_create_get_list_delete(client: Any) -> None:
    created = client.create_custom_job(parent=PARENT, custom_job=job("print('hi')", team="ml"))
    assert created.name == f"{PARENT}/customJobs/1000"
    assert created.state == JobState.JOB_STATE_QUEUED
    assert created.labels == {"team": "ml"}
    done = wait(client, created.name)
    assert done.state == JobState.JOB_STATE_SUCCEEDED
    assert done.create_time <= done.start_time <= done.end_time <= done.update_time
    assert done.job_spec == created.job_spec
    listed = client.list_custom_jobs(parent=PARENT)
    assert [j.name for j in listed] == [created.name]
    client.delete_custom_job(name=created.name).result(timeout=5)
    with pytest.raises(exceptions.NotFound, match="customJobs/1000 not found"):
        client.get_custom_job(name=created.name)
    assert list(client.list_custom_jobs(parent=PARENT)) == []


def test_list_pages_and_filters(client: Any) -> None:
    names = [
        client.create_custom_job(parent=PARENT, custom_job=job("pass", f"job{i}")).name
        for i in range(5)
    ]
    for name in names:
        wait(client, name)
    pages = client.list_custom_jobs(request={"parent": PARENT, "page_size": 2}).pages
    assert [[j.display_name for j in page.custom_jobs] for page in pages] == [
        ["job0", "job1"],
        ["job2", "job3"],
        ["job4"],
    ]
    picked = client.list_custom_jobs(
        request={"parent": PARENT, "filter": 'display_name="job3" AND state=JOB_STATE_SUCCEEDED'}
    )
    assert [j.name for j in picked] == [names[3]]
    with pytest.raises(exceptions.InvalidArgument, match="filter: 'create_time>1'"):
        client.list_custom_jobs(request={"parent": PARENT, "filter": "create_time>1"})


def test_cancel_running_then_refuse_second_cancel(client: Any) -> None:
    created = client.create_custom_job(parent=PARENT, custom_job=job("import time; time.sleep(60)"))
    with pytest.raises(exceptions.FailedPrecondition, match="Cannot delete CustomJob"):
        client.delete_custom_job(name=created.name)
    client.cancel_custom_job(name=created.name)
    done = wait(client, created.name)
    assert done.state == JobState.JOB_STATE_CANCELLED
    assert (done.error.code, done.error.message) == (1, "CANCELED")
    with pytest.raises(exceptions.FailedPrecondition, match="already in state JOB_STATE_CANCELLED"):
        client.cancel_custom_job(name=created.name)


def test_errors_name_the_field(client: Any) -> None:
    with pytest.raises(exceptions.NotFound, match=f"CustomJob {PARENT}/customJobs/42 not found"):
        client.get_custom_job(name=f"{PARENT}/customJobs/42")
    with pytest.raises(exceptions.InvalidArgument, match="parent: 'projects/demo'"):
        client.create_custom_job(parent="projects/demo", custom_job=job("pass"))
    with pytest.raises(exceptions.InvalidArgument, match="display_name"):
        client.create_custom_job(parent=PARENT, custom_job=job("pass", ""))
    with pytest.raises(exceptions.InvalidArgument, match="name: 'customJobs/1'"):
        client.get_custom_job(name="customJobs/1")
    assert list(client.list_custom_jobs(parent=PARENT)) == []


def test_an_unknown_google_training_image_is_refused_at_create_with_the_known_ones(
    client: Any,
) -> None:
    # PythonPackageSpec.executor_image_uri: "You must use an image from this list"
    # (https://cloud.google.com/vertex-ai/docs/training/pre-built-containers).
    package = {
        "executor_image_uri": "us-docker.pkg.dev/vertex-ai/training/xgboost-cpu.1-7:latest",
        "package_uris": ["gs://bkt/trainer.tar.gz"],
        "python_module": "trainer.task",
    }
    pool = {"replica_count": 1, "machine_spec": MACHINE, "python_package_spec": package}
    spec = {"display_name": "x", "job_spec": {"worker_pool_specs": [pool]}}
    with pytest.raises(exceptions.InvalidArgument) as err:
        client.create_custom_job(parent=PARENT, custom_job=spec)
    message = err.value.message
    assert "workerPoolSpecs[0].pythonPackageSpec.executorImageUri: " in message
    assert "is not one of Vertex's prebuilt training images" in message
    assert "closest first: us-docker.pkg.dev/vertex-ai/training/xgboost-cpu.1-6:latest" in message
    assert list(client.list_custom_jobs(parent=PARENT)) == []


def test_unavailable_fault_is_seeded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def outcomes() -> list[str]:
        faults = emulator.Faults(unavailable_rate=0.5, seed=7, methods=("GetCustomJob",))
        with emulator.start(tmp_path / str(time.monotonic_ns()), faults=faults) as emu:
            monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
            client = job_client("us-central1")
            seen = []
            for _ in range(12):
                try:
                    client.get_custom_job(name=f"{PARENT}/customJobs/1", retry=None)
                except exceptions.ServiceUnavailable:
                    seen.append("unavailable")
                except exceptions.NotFound:
                    seen.append("not_found")
            return seen

    first = outcomes()
    assert first == outcomes()
    assert {"unavailable", "not_found"} == set(first)


def test_bad_fault_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="unavailable_rate: 1.5; accepted: a share from 0.0 to 1"):
        emulator.Faults(unavailable_rate=1.5)


def test_label_filters_page_from_the_index_and_read_a_missing_label_as_empty(
    client: Any,
) -> None:
    made = [
        client.create_custom_job(parent=PARENT, custom_job=job("pass", f"j{i}", **labels)).name
        for i, labels in enumerate([{"run": "a"}, {"run": "b"}, {}, {"run": "a", "t": "x"}])
    ]
    for name in made:
        wait(client, name)

    def listed(text: str, size: int = 0) -> list[list[str]]:
        request = {"parent": PARENT, "filter": text, "page_size": size}
        pages = client.list_custom_jobs(request=request).pages
        return [[j.display_name for j in page.custom_jobs] for page in pages]

    assert listed('labels.run="a"') == [["j0", "j3"]]
    assert listed('labels.run="a"', size=1) == [["j0"], ["j3"]]
    assert listed('labels.run!="a"') == [["j1", "j2"]]
    assert listed('labels.run=""') == [["j2"]]
    assert listed('labels.run="a" AND labels.t="x" AND state=JOB_STATE_SUCCEEDED') == [["j3"]]
    assert listed("state=JOB_STATE_NOT_A_STATE") == [[]]
    assert listed('display_name!="j1" AND labels.run="b"') == [[]]


def test_create_fills_each_pools_boot_disk_as_vertex_does(client: Any) -> None:
    """DiskSpec (machine_resources.proto): boot_disk_type "For non-A3U machines, the default
    value is "pd-ssd"", boot_disk_size_gb "(default is 100GB)"; a size or type the request
    names is kept, and an empty pool stays empty (a skipped role keeps its place)."""
    spec = job("pass")
    pool = spec["job_spec"]["worker_pool_specs"][0]
    sized = {**pool, "disk_spec": {"boot_disk_size_gb": 250}}
    spec["job_spec"]["worker_pool_specs"] = [pool, {}, sized]
    created = client.create_custom_job(parent=PARENT, custom_job=spec)
    got = client.get_custom_job(name=created.name)
    pools = got.job_spec.worker_pool_specs
    disks = [(p.disk_spec.boot_disk_type, p.disk_spec.boot_disk_size_gb) for p in pools]
    assert disks == [("pd-ssd", 100), ("", 0), ("pd-ssd", 250)]
    assert type(pools[1]).pb(pools[1]).ByteSize() == 0
    sweep = {
        "display_name": "disks",
        "max_trial_count": 1,
        "parallel_trial_count": 1,
        "study_spec": {
            "metrics": [{"metric_id": "score", "goal": "MAXIMIZE"}],
            "parameters": [
                {"parameter_id": "units", "integer_value_spec": {"min_value": 1, "max_value": 3}}
            ],
        },
        "trial_job_spec": job("pass")["job_spec"],
    }
    made = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=sweep)
    trial_pool = made.trial_job_spec.worker_pool_specs[0]
    assert (trial_pool.disk_spec.boot_disk_type, trial_pool.disk_spec.boot_disk_size_gb) == (
        "pd-ssd",
        100,
    )
    wait(client, created.name)
    wait_job(client.get_hyperparameter_tuning_job, made.name, 20.0)  # it fails: no metric
