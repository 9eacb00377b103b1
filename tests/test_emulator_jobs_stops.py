"""Stopping a job's replicas waits out their grace period on a thread of its own, not one of
the job threads every job shares: replicas that ignore SIGTERM hold up no other job, whether
the job has ended or restarts every replica (``restartJobOnWorkerRestart``, a job retry).

Vertex gives a stopped replica a grace period after SIGTERM before SIGKILL (Vertex AI docs,
"Handle preemption": SIGTERM, then the VM is stopped; the emulator's
``trainpool.emulator.jobs.processes.TERMINATE_GRACE_S``), and a cancelled job shows
JOB_STATE_CANCELLING until it has stopped (aiplatform_v1 ``job_state.py``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.emulator.jobs import engine, processes
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(120)


def job(name: str, command: list[str]) -> dict[str, Any]:
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": "local/none", "command": command},
    }
    return {"display_name": name, "job_spec": {"worker_pool_specs": [pool]}}


def restarting(out: Path, go: Path, i: int) -> dict[str, Any]:
    """Job ``i``: its primary ignores SIGTERM until ``go`` exists; its worker fails its first
    start; ``restartJobOnWorkerRestart``. Each start appends a line to ``out/<i>.p`` or
    ``out/<i>.w``."""
    starts = out / f"{i}"
    primary = f"echo p >> '{starts}.p'; trap '' TERM; while [ ! -e '{go}' ]; do sleep 0.05; done"
    worker = f"echo w >> '{starts}.w'; [ $(wc -l < '{starts}.w') -gt 1 ] || exit 3"
    spec = job(f"restarting{i}", ["sh", "-c", primary])["job_spec"]
    spec["worker_pool_specs"].append(dict(spec["worker_pool_specs"][0]))
    spec["worker_pool_specs"][1]["container_spec"] = {
        "image_uri": "local/none",
        "command": ["sh", "-c", worker],
    }
    spec["scheduling"] = {"restart_job_on_worker_restart": True}
    return {"display_name": f"restarting{i}", "job_spec": spec}


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_replicas_that_ignore_sigterm_hold_up_no_other_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(processes, "TERMINATE_GRACE_S", 60.0)  # far longer than the test may take
    go = tmp_path / "go"
    stubborn = ["sh", "-c", f"trap '' TERM; while [ ! -e '{go}' ]; do sleep 0.05; done"]
    with emulator.start(tmp_path / "root", max_replicas=engine.WORKERS + 2) as running:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", running.address)
        client = job_client("us-central1")
        held = [
            client.create_custom_job(parent=PARENT, custom_job=job(f"held{i}", stubborn))
            for i in range(engine.WORKERS)  # as many as there are job threads
        ]
        deadline = time.monotonic() + 60
        while any(
            client.get_custom_job(name=j.name).state != JobState.JOB_STATE_RUNNING for j in held
        ):
            assert time.monotonic() < deadline, "the held jobs never ran"
            time.sleep(0.05)
        for j in held:
            client.cancel_custom_job(name=j.name)
        quick = client.create_custom_job(parent=PARENT, custom_job=job("quick", ["true"]))
        # the held jobs' stops wait 60 s for SIGTERM to work; the quick job runs meanwhile
        assert wait_job(client.get_custom_job, quick.name, 45).state == JobState.JOB_STATE_SUCCEEDED
        states = [client.get_custom_job(name=j.name).state for j in held]
        assert states == [JobState.JOB_STATE_CANCELLING] * len(held)
        go.touch()  # the stubborn replicas leave: the stops end, the jobs are CANCELLED
        ended = [wait_job(client.get_custom_job, j.name, 30) for j in held]
        assert [j.state for j in ended] == [JobState.JOB_STATE_CANCELLED] * len(held)


def test_a_restart_of_every_replica_waits_out_the_grace_off_the_job_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``restartJobOnWorkerRestart``: a worker's failure restarts every replica (Vertex AI
    docs, "Restart workers during the training job"; ``Scheduling`` in the CustomJobSpec
    reference), so the primary, which ignores SIGTERM, is stopped first. As many such jobs
    as there are job threads wait out that grace period at once, and a quick job still runs
    meanwhile; the restarting jobs stay RUNNING, then restart every replica and succeed."""
    monkeypatch.setattr(processes, "TERMINATE_GRACE_S", 60.0)  # far longer than the test may take
    go, out = tmp_path / "go", tmp_path / "out"
    out.mkdir()

    with emulator.start(tmp_path / "root", max_replicas=2 * engine.WORKERS + 1) as running:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", running.address)
        client = job_client("us-central1")
        held = [
            client.create_custom_job(parent=PARENT, custom_job=restarting(out, go, i))
            for i in range(engine.WORKERS)  # as many as there are job threads
        ]
        deadline = time.monotonic() + 60
        while any(lines(out / f"{i}.w") < 1 for i in range(len(held))):
            assert time.monotonic() < deadline, "the workers never started"
            time.sleep(0.05)
        # each worker fails at its first start: its job's restart waits for the primary to go
        quick = client.create_custom_job(parent=PARENT, custom_job=job("quick", ["true"]))
        assert wait_job(client.get_custom_job, quick.name, 45).state == JobState.JOB_STATE_SUCCEEDED
        states = [client.get_custom_job(name=j.name).state for j in held]
        assert states == [JobState.JOB_STATE_RUNNING] * len(held)
        assert [lines(out / f"{i}.p") for i in range(len(held))] == [1] * len(held)
        go.touch()  # the primaries leave: the stops end, every replica starts again
        ended = [wait_job(client.get_custom_job, j.name, 30) for j in held]
        assert [j.state for j in ended] == [JobState.JOB_STATE_SUCCEEDED] * len(held)
    assert [lines(out / f"{i}.p") for i in range(len(held))] == [2] * len(held)
    assert [lines(out / f"{i}.w") for i in range(len(held))] == [2] * len(held)


def test_a_job_cancelled_while_its_replicas_restart_starts_none_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled while a restart of every replica waits for the primary to go: the job is
    CANCELLING until it has gone, then CANCELLED, and no replica was started again."""
    monkeypatch.setattr(processes, "TERMINATE_GRACE_S", 60.0)
    go, out = tmp_path / "go", tmp_path / "out"
    out.mkdir()
    with emulator.start(tmp_path / "root") as running:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", running.address)
        client = job_client("us-central1")
        held = client.create_custom_job(parent=PARENT, custom_job=restarting(out, go, 0))
        deadline = time.monotonic() + 60
        log = running.manager.files(held.name).log
        while "restarting every replica" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline, "the worker never failed"
            time.sleep(0.05)
        client.cancel_custom_job(name=held.name)
        time.sleep(0.5)
        assert client.get_custom_job(name=held.name).state == JobState.JOB_STATE_CANCELLING
        go.touch()
        assert wait_job(client.get_custom_job, held.name, 30).state == JobState.JOB_STATE_CANCELLED
    assert (lines(out / "0.p"), lines(out / "0.w")) == (1, 1)
