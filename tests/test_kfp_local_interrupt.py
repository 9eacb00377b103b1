"""SIGTERM of `trainpool run --local`: the run's jobs end CANCELLED and it exits non-zero;
SIGKILL: nothing it started (tasks, the emulator's replicas) outlives it by more than 5 s."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.pipelines import compile_fixture

import trainpool.emulator as emulator
from trainpool.config import EMULATOR_ENV
from trainpool.emulator import root_lock
from trainpool.emulator.jobs.containers import ContainerEngine
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(120)
PARENT = "projects/demo-project/locations/us-central1"


def replica_running(root: Path) -> bool:
    log = root / "jobs" / "1000" / "workerpool0-0.log"
    return log.is_file() and "cancel me" in log.read_text()


def start_run(tmp_path: Path, *params: str) -> tuple[subprocess.Popen[str], Path]:
    """``trainpool run --local`` of the with_job fixture, once its replica runs (with the
    container engine where the test asked for it)."""
    pipeline = compile_fixture("with_job", tmp_path)
    root = tmp_path / "root"
    env = {k: v for k, v in os.environ.items() if k != EMULATOR_ENV}
    run = subprocess.Popen(
        [sys.executable, "-c", "from trainpool.cli import main; main()", "run", str(pipeline)]
        + [
            "--local",
            "--root",
            str(root),
            "--param",
            "message=cancel me",
            "--param",
            "sleep_s=300",
            *params,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 90
    while not replica_running(root):
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)
    return run, root


def descendants(pid: int) -> list[tuple[int, str]]:
    """``(pid, start time)`` of every descendant of ``pid``."""
    children: dict[int, list[tuple[int, str]]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append((int(stat.parent.name), fields[19]))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += [kid for kid, _ in kids]
    return found


def alive(pid: int, started: str) -> bool:
    """That very process (not a reuse of its pid) still runs (a zombie does not count)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[19] == started and fields[0] != "Z"


def test_sigterm_cancels_the_runs_jobs_and_exits_non_zero(tmp_path: Path) -> None:
    run, root = start_run(tmp_path)
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 128 + signal.SIGTERM, (out, err)
    assert "pipeline with-job CANCELLED: cancelled by SIGTERM" in err
    assert root_lock.running(root) is None
    with emulator.start(root) as emu:
        os.environ[EMULATOR_ENV] = emu.address
        try:
            job = job_client("us-central1").get_custom_job(name=f"{PARENT}/customJobs/1000")
        finally:
            del os.environ[EMULATOR_ENV]
    assert job.state.name == "JOB_STATE_CANCELLED"
    assert f"CustomJob {PARENT}/customJobs/1000: CANCELLED" in out


@pytest.mark.timeout(600)
def test_sigterm_of_a_run_of_containers_cancels_its_job_and_leaves_no_container(
    engine: ContainerEngine, python_base: str, tmp_path: Path
) -> None:
    # the task (trainpool's components image: a container of its dependencies) and the job's
    # replica (a container of python:3.11-slim) both containers: SIGTERM of the run ends the
    # task, cancels the job, and the emulator that closes with the run leaves no container
    from fixtures.engine import ours

    run, root = start_run(tmp_path, "--param", f"image={python_base}")
    assert len(ours(engine, root)) == 2  # the task and the replica
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 128 + signal.SIGTERM, (out, err)
    assert f"CustomJob {PARENT}/customJobs/1000: CANCELLED" in out
    assert ours(engine, root) == []


def test_sigkill_leaves_no_task_or_replica_running_after_5_s(tmp_path: Path) -> None:
    # the task retries an emulator that does not answer for a minute, as the launcher does
    run, root = start_run(tmp_path, "--param", "retry_s=60")
    started = descendants(run.pid)
    # the task (sh and its Python), the task guard, the replica guard and the replica
    assert len(started) >= 4, started
    run.kill()
    run.communicate(timeout=30)
    deadline = time.monotonic() + 5
    while any(alive(pid, at) for pid, at in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid, at in started if alive(pid, at)]
    assert not left, [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in left]
