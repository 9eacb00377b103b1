"""Vertex's failure rules on real processes over real gRPC (trainpool/emulator/failures.py).

Source: https://cloud.google.com/vertex-ai/docs/training/understanding-training-service
("Restart workers during the training job"); Scheduling.restartJobOnWorkerRestart and
Scheduling.disableRetries in the CustomJobSpec reference.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(90)


# Each start appends its task and its own host:port to <out>/<replica>.starts; the first
# --fail-times starts exit --code (or kill themselves with --signal), later ones sleep
# --sleep and exit 0.
TRAINER = """
import argparse, json, os, sys, time
parser = argparse.ArgumentParser()
parser.add_argument("--out")
parser.add_argument("--fail-times", type=int, default=0)
parser.add_argument("--code", type=int, default=3)
parser.add_argument("--sleep", type=float, default=0.0)
parser.add_argument("--fail-delay", type=float, default=0.0)
parser.add_argument("--signal", type=int, default=0)
args = parser.parse_args()
spec = json.loads(os.environ["CLUSTER_SPEC"])
task = spec["task"]
name = f"{task['type']}-{task['index']}"
path = os.path.join(args.out, name + ".starts")
with open(path, "a") as handle:
    host = spec["cluster"][task["type"]][task["index"]]
    handle.write(json.dumps({"task": task, "host": host, "pid": os.getpid()}) + "\\n")
with open(path) as handle:
    starts = len(handle.readlines())
print(f"{name} start {starts}", flush=True)
if starts <= args.fail_times:
    time.sleep(args.fail_delay)
    if args.signal:
        os.kill(os.getpid(), args.signal)
    sys.exit(args.code)
time.sleep(args.sleep)
"""


@pytest.fixture
def out(tmp_path: Path) -> Path:
    (tmp_path / "trainer.py").write_text(TRAINER)
    (tmp_path / "out").mkdir()
    return tmp_path / "out"


def serve(root: Path, monkeypatch: pytest.MonkeyPatch, faults: Any = None) -> Any:
    emu = emulator.start(root, faults=faults)
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
    return emu


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


@pytest.fixture
def client(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with serve(root, monkeypatch):
        yield job_client("us-central1")


def pool(out: Path, count: int, *args: str) -> dict[str, Any]:
    command = [sys.executable, str(out.parent / "trainer.py"), f"--out={out}", *args]
    return {
        "replica_count": count,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": "local/none", "command": command},
    }


def run(client: Any, pools: list[dict[str, Any]], **spec: Any) -> Any:
    job = {"display_name": "job", "job_spec": {"worker_pool_specs": pools, **spec}}
    created = client.create_custom_job(parent=PARENT, custom_job=job)
    return wait_job(client.get_custom_job, created.name, 60)


def starts(out: Path, name: str) -> list[dict[str, Any]]:
    path = out / f"{name}.starts"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_worker_killed_once_is_restarted_with_the_same_task_and_the_job_succeeds(
    tmp_path: Path, out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    faults = emulator.Faults(kill=emulator.KillFault("workerpool1-0", 0.3))
    with serve(tmp_path / "root", monkeypatch, faults):
        pools = [pool(out, 1, "--sleep=1.5"), pool(out, 1, "--sleep=1")]
        done = run(job_client("us-central1"), pools)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    first, second = starts(out, "workerpool1-0")
    assert (first["task"], first["host"]) == (second["task"], second["host"])
    assert first["pid"] != second["pid"]
    assert len(starts(out, "workerpool0-0")) == 1  # only the killed worker restarts


def test_a_permanent_exit_fails_the_job_at_once_naming_the_replica(client: Any, out: Path) -> None:
    done = run(client, [pool(out, 1, "--sleep=5"), pool(out, 1, "--fail-times=9", "--code=1")])
    assert done.state == JobState.JOB_STATE_FAILED
    assert done.error.message.splitlines()[0] == (
        "The replica workerpool1-0 exited with a non-zero status of 1. Termination reason: Error."
    )
    assert len(starts(out, "workerpool1-0")) == 1


def test_six_failures_of_one_worker_retry_the_whole_job(client: Any, out: Path) -> None:
    done = run(client, [pool(out, 1, "--sleep=3"), pool(out, 1, "--fail-times=6", "--sleep=0.5")])
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    assert len(starts(out, "workerpool1-0")) == 7  # 1 + 5 restarts, then the retried job's
    assert len(starts(out, "workerpool0-0")) == 2  # the retry restarts every replica


def test_a_worker_that_keeps_failing_fails_the_job_after_three_retries(
    client: Any, out: Path
) -> None:
    done = run(client, [pool(out, 1, "--sleep=5"), pool(out, 1, "--fail-times=99")])
    assert done.state == JobState.JOB_STATE_FAILED
    lines = done.error.message.splitlines()
    assert lines[0] == (
        "The replica workerpool1-0 exited with a non-zero status of 3. Termination reason: Error."
    )
    assert lines[1] == "The replica was restarted 5 time(s) and the job retried 3 time(s)."
    assert len(starts(out, "workerpool1-0")) == 6 * 4
    assert len(starts(out, "workerpool0-0")) == 4


def test_restart_job_on_worker_restart_restarts_every_replica(client: Any, out: Path) -> None:
    failing = pool(out, 1, "--fail-times=1", "--fail-delay=0.5", "--sleep=0.5")
    pools = [pool(out, 1, "--sleep=1.5"), failing, pool(out, 1, "--sleep=1.5")]
    done = run(client, pools, scheduling={"restart_job_on_worker_restart": True})
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    assert len(starts(out, "workerpool1-0")) == 2
    assert len(starts(out, "workerpool0-0")) == len(starts(out, "workerpool2-0")) == 2


def test_disable_retries_fails_at_once(client: Any, out: Path) -> None:
    pools = [pool(out, 1, "--sleep=5"), pool(out, 1, "--fail-times=1")]
    done = run(client, pools, scheduling={"disable_retries": True})
    assert done.state == JobState.JOB_STATE_FAILED
    assert done.error.message.startswith(
        "The replica workerpool1-0 exited with a non-zero status of 3."
    )
    assert len(starts(out, "workerpool1-0")) == 1


def test_a_worker_that_sigkills_itself_once_is_restarted_and_the_job_succeeds(
    client: Any, out: Path, root: Path
) -> None:
    # The kernel's out-of-memory killer SIGKILLs the trainer itself (not its process group):
    # a signal is not one of the permanent "common errors", so the worker is restarted.
    pools = [pool(out, 1, "--sleep=1.5"), pool(out, 1, "--fail-times=1", "--signal=9")]
    done = run(client, pools)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    assert len(starts(out, "workerpool1-0")) == 2
    log = (root / "jobs" / done.name.rsplit("/", 1)[1] / "job.log").read_text()
    assert "workerpool1-0 exited with status 137 (killed by signal 9, SIGKILL); restarting" in log


def test_a_worker_killed_by_a_signal_every_time_fails_the_job_naming_the_signal(
    client: Any, out: Path
) -> None:
    pools = [pool(out, 1, "--sleep=5"), pool(out, 1, "--fail-times=99", "--signal=9")]
    done = run(client, pools)
    assert done.state == JobState.JOB_STATE_FAILED
    lines = done.error.message.splitlines()
    assert lines[0] == (
        "The replica workerpool1-0 exited with a non-zero status of 9(SIGKILL). "
        "Termination reason: Error."
    )
    assert lines[1] == "The replica was restarted 5 time(s) and the job retried 3 time(s)."
    assert len(starts(out, "workerpool1-0")) == 6 * 4


def test_a_segfault_is_named_as_its_signal(client: Any, out: Path) -> None:
    pools = [pool(out, 1, "--fail-times=99", "--signal=11")]
    done = run(client, pools, scheduling={"disable_retries": True})
    assert done.state == JobState.JOB_STATE_FAILED
    assert done.error.message.startswith(
        "The replica workerpool0-0 exited with a non-zero status of 11(SIGSEGV)."
    )
