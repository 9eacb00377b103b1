"""The machine's replica quota, over gRPC with the official client, as Vertex's quotas behave.

Vertex: jobs the quota cannot hold now stay QUEUED ("one of the jobs remain in queued state and
won't start training", Vertex AI NAS docs; ``JOB_STATE_QUEUED``: "processing has not yet
begun", aiplatform_v1 job_state.py) and a request beyond the quota's limit is refused with
429 RESOURCE_EXHAUSTED ("The following quota metrics exceed quota limits: ...",
https://cloud.google.com/vertex-ai/docs/quotas).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_image import HOST_IMAGE, host_image
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from google.api_core import exceptions
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.emulator.jobs import engine
from trainpool.emulator.jobs.quota import LIMIT_ENV, default_limit, parse_limit, replica_slots
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(120)

QUEUED, RUNNING = JobState.JOB_STATE_QUEUED, JobState.JOB_STATE_RUNNING
INTEGERS = {"min_value": 1, "max_value": 2}


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path / "root", max_replicas=2) as running:
        host_image(running.root)
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", running.address)
        yield running


REPORT = "import hypertune; hypertune.HyperTune().report_hyperparameter_tuning_metric('m', 1)"


def held(go: Path, replicas: int = 1, report: bool = False) -> dict[str, Any]:
    """A job spec whose replicas run until file ``go`` exists (then report metric ``m``)."""
    wait = f'while [ ! -e "{go}" ]; do sleep 0.05; done'
    if report:
        wait += f'; python3 -c "{REPORT}"'
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": HOST_IMAGE, "command": ["sh", "-c", wait]},
    }
    workers = [{**pool, "replica_count": replicas - 1}] if replicas > 1 else []
    return {"worker_pool_specs": [pool, *workers]}


def create(client: Any, name: str, spec: dict[str, Any]) -> Any:
    return client.create_custom_job(
        parent=PARENT, custom_job={"display_name": name, "job_spec": spec}
    )


def state_of(client: Any, job: Any) -> JobState:
    return client.get_custom_job(name=job.name).state


def until(predicate: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def job_log(emu: emulator.Emulator, job: Any) -> str:
    return (emu.root / "jobs" / job.name.rsplit("/", 1)[-1] / "job.log").read_text()


def test_jobs_beyond_the_quota_wait_queued_and_start_in_creation_order(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    client = job_client("us-central1")
    go = {n: tmp_path / f"go-{n}" for n in "abc"}
    a = create(client, "a", held(go["a"]))
    b = create(client, "b", held(go["b"], replicas=2))  # needs both slots
    c = create(client, "c", held(go["c"]))  # would fit beside a, but b came first
    until(lambda: state_of(client, a) == RUNNING)
    time.sleep(1.0)
    assert [state_of(client, j) for j in (b, c)] == [QUEUED, QUEUED]
    assert "waiting in state QUEUED for 2 replica slot(s)" in job_log(emu, b)
    assert "1 other job(s) wait, those created earlier first" in job_log(emu, c)
    go["a"].touch()
    until(lambda: state_of(client, b) == RUNNING)
    assert state_of(client, c) == QUEUED
    go["b"].touch()
    until(lambda: state_of(client, c) == RUNNING)
    go["c"].touch()
    for job in (a, b, c):
        assert wait_job(client.get_custom_job, job.name, 30).state == JobState.JOB_STATE_SUCCEEDED
    assert "in state QUEUED for replica slots; starting" in job_log(emu, c)
    starts = [client.get_custom_job(name=j.name).start_time for j in (a, b, c)]
    assert starts == sorted(starts)


def test_a_job_beyond_the_whole_quota_is_refused_and_nothing_is_created(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    client = job_client("us-central1")
    with pytest.raises(exceptions.ResourceExhausted, match="needs 3 replicas at once.*quota is 2"):
        create(client, "big", held(tmp_path / "go", replicas=3))
    study = {
        "metrics": [{"metric_id": "m", "goal": "MAXIMIZE"}],
        "parameters": [
            {"parameter_id": "x", "integer_value_spec": {"min_value": 1, "max_value": 2}}
        ],
    }
    sweep = {
        "display_name": "big-sweep",
        "max_trial_count": 1,
        "parallel_trial_count": 1,
        "study_spec": study,
        "trial_job_spec": held(tmp_path / "go", replicas=3),
    }
    with pytest.raises(exceptions.ResourceExhausted, match="quota is 2"):
        client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=sweep)
    assert list(client.list_custom_jobs(parent=PARENT)) == []
    assert list(client.list_hyperparameter_tuning_jobs(parent=PARENT)) == []


def test_a_queued_job_cancelled_ends_cancelled_without_starting(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    client = job_client("us-central1")
    first = create(client, "first", held(tmp_path / "go", replicas=2))
    queued = create(client, "queued", held(tmp_path / "go"))
    until(lambda: state_of(client, first) == RUNNING)
    client.cancel_custom_job(name=queued.name)
    done = wait_job(client.get_custom_job, queued.name, 10)
    assert done.state == JobState.JOB_STATE_CANCELLED and done.error.code == 1
    assert not done.start_time
    assert not list((emu.root / "jobs" / queued.name.rsplit("/", 1)[-1]).glob("workerpool*"))
    (tmp_path / "go").touch()
    assert wait_job(client.get_custom_job, first.name, 30).state == JobState.JOB_STATE_SUCCEEDED


def test_a_sweeps_trials_count_against_the_quota(emu: emulator.Emulator, tmp_path: Path) -> None:
    client = job_client("us-central1")
    blocker = create(client, "blocker", held(tmp_path / "go-blocker"))
    study = {
        "metrics": [{"metric_id": "m", "goal": "MAXIMIZE"}],
        "parameters": [
            {"parameter_id": "x", "integer_value_spec": {"min_value": 1, "max_value": 2}}
        ],
        "algorithm": "GRID_SEARCH",
    }
    sweep = client.create_hyperparameter_tuning_job(
        parent=PARENT,
        hyperparameter_tuning_job={
            "display_name": "sweep",
            "max_trial_count": 2,
            "parallel_trial_count": 2,
            "max_failed_trial_count": 2,
            "study_spec": study,
            "trial_job_spec": held(tmp_path / "go", report=True),
        },
    )

    def trial_jobs() -> list[Any]:
        return [j for j in client.list_custom_jobs(parent=PARENT) if j.name != blocker.name]

    until(lambda: len(trial_jobs()) == 2 and RUNNING in [j.state for j in trial_jobs()])
    time.sleep(0.5)
    assert sorted(j.state for j in trial_jobs()) == [QUEUED, RUNNING]  # 1 slot left of 2
    (tmp_path / "go").touch()
    (tmp_path / "go-blocker").touch()
    done = wait_job(client.get_hyperparameter_tuning_job, sweep.name, 30)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    assert all(j.state == JobState.JOB_STATE_SUCCEEDED for j in trial_jobs())


def test_threads_stay_bounded_however_many_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with emulator.start(tmp_path / "root", max_replicas=4) as emu:
        host_image(emu.root)
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        quick = {
            "worker_pool_specs": [
                {
                    "replica_count": 1,
                    "machine_spec": {"machine_type": "n1-standard-4"},
                    "container_spec": {"image_uri": HOST_IMAGE, "command": ["sleep", "0.2"]},
                }
            ]
        }
        wait_job(client.get_custom_job, create(client, "warm", quick).name, 30)
        baseline = threading.active_count()
        peak = [baseline]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.01):
                peak.append(threading.active_count())

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            jobs = [create(client, f"j{i}", quick) for i in range(60)]
            ended = [wait_job(client.get_custom_job, j.name, 90) for j in jobs]
        finally:
            done.set()
            sampler.join()
    assert all(j.state == JobState.JOB_STATE_SUCCEEDED for j in ended)
    # the engine's pools fill up to their size, and no further (60 jobs, 4 at once)
    pools = engine.WORKERS + engine.SETUP_WORKERS + engine.TERMINATE_WORKERS
    assert max(peak) <= baseline + 1 + pools, max(peak)


def test_the_quota_comes_from_the_flag_the_environment_or_the_cpus() -> None:
    assert default_limit({LIMIT_ENV: "3"}) == 3
    assert default_limit({}) >= 8
    for bad in ("0", "-1", "many", "2.5"):
        with pytest.raises(ValueError, match=f"{LIMIT_ENV}: '{bad}'; accepted: a whole number"):
            default_limit({LIMIT_ENV: bad})
    with pytest.raises(ValueError, match="--max-replicas: 0"):
        parse_limit(0)
    reducer = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
    pools = [
        {"replicaCount": 1, "containerSpec": {"imageUri": "x"}},
        {"replicaCount": 3, "containerSpec": {"imageUri": "x"}},
        {"replicaCount": 2, "containerSpec": {"imageUri": reducer}},
    ]
    assert replica_slots({"workerPoolSpecs": pools}) == 4  # a Reduction Server is not started


def test_jobs_on_a_persistent_resource_wait_for_its_pool_not_for_each_other() -> None:
    """A job holding a resource pool's replicas keeps the next job on that pool QUEUED (in
    creation order), while a job on other machines passes; released replicas admit them."""
    from trainpool.emulator.jobs.quota import Quota, Ticket

    quota = Quota(10)
    admitted: list[int] = []

    def ticket(order: int, pools: dict[str, tuple[int, int]]) -> Ticket:
        return Ticket(order, 1, lambda: admitted.append(order), pools=pools)

    first = ticket(1, {"r#a": (2, 2)})
    second = ticket(2, {"r#a": (1, 2)})
    third = ticket(3, {"r#a": (1, 2)})
    elsewhere = ticket(4, {})
    assert quota.request(first)
    assert not quota.request(second)
    assert not quota.request(third)
    assert quota.request(elsewhere)
    assert quota.in_use == {"r#a": 2}
    quota.release(first)
    assert admitted == [1, 4, 2, 3]
    assert quota.in_use == {"r#a": 2}
    assert quota.waiting == 0
