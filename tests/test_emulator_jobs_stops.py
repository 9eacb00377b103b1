"""Stopping a job's replicas waits out their grace period on a thread of its own, not one of
the job threads every job shares: replicas that ignore SIGTERM hold up no other job.

Vertex gives a stopped replica a grace period after SIGTERM before SIGKILL (Vertex AI docs,
"Handle preemption": SIGTERM, then the VM is stopped; the emulator's
``trainpool.emulator.jobs.processes.STOP_GRACE_S``), and a cancelled job shows
JOB_STATE_CANCELLING until it has stopped (aiplatform_v1 ``job_state.py``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from fixtures.jobs import wait_job
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.emulator.jobs import engine, processes
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(120)

PARENT = "projects/demo/locations/us-central1"


def job(name: str, command: list[str]) -> dict[str, Any]:
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": "local/none", "command": command},
    }
    return {"display_name": name, "job_spec": {"worker_pool_specs": [pool]}}


def test_replicas_that_ignore_sigterm_hold_up_no_other_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(processes, "STOP_GRACE_S", 60.0)  # far longer than the test may take
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
