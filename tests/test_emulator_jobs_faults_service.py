"""Preempting a running job on demand, as Compute Engine reclaims Spot VMs.

Vertex: "When Spot VMs are preempted, the job fails with a STOCKOUT error"
(https://cloud.google.com/vertex-ai/docs/training/use-spot-vms, "Preemption handling");
the rule and its reading are trainpool/emulator/failures.py (PREEMPTION_RULE).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from fixtures.jobs import wait_job
from fixtures.processes import alive
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState
from typer.testing import CliRunner

import trainpool.emulator as emulator
from trainpool.cli import app
from trainpool.emulator.api.rpc import RpcError
from trainpool.emulator.jobs.failure_rules import CODE_RESOURCE_EXHAUSTED
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(180)


# Each replica records its pid, then loops; SIGTERM (the VM's shutdown notice) is recorded
# before it exits, so the test sees the grace a preempted trainer gets.
TRAINER = """
import json, os, signal, sys, time
spec = json.loads(os.environ["CLUSTER_SPEC"])
name = f"{spec['task']['type']}-{spec['task']['index']}"
out = sys.argv[1]
def on_term(signum, frame):
    open(os.path.join(out, name + ".sigterm"), "w").close()
    sys.exit(143)
signal.signal(signal.SIGTERM, on_term)
with open(os.path.join(out, name + ".pids"), "a") as handle:
    handle.write(f"{os.getpid()}\\n")
while True:
    time.sleep(0.05)
"""


def job(out: Path, strategy: str = "SPOT") -> dict[str, Any]:
    pool = {
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {
            "image_uri": "local/none",
            "command": [sys.executable, "-c", TRAINER, str(out)],
        },
    }
    spec = {
        "worker_pool_specs": [{**pool, "replica_count": 1}, {**pool, "replica_count": 2}],
        "scheduling": {"strategy": strategy},
    }
    return {"display_name": "spot", "job_spec": spec}


@pytest.fixture
def emu(emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch) -> emulator.Emulator:
    """The shared ``emu`` (tests/conftest.py), in project demo."""
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "demo")
    return emu


@pytest.fixture
def out(tmp_path: Path) -> Path:
    (tmp_path / "out").mkdir()
    return tmp_path / "out"


def running(client: Any, out: Path, strategy: str = "SPOT") -> Any:
    created = client.create_custom_job(parent=PARENT, custom_job=job(out, strategy))
    deadline = time.monotonic() + 90  # a loaded machine starts three Pythons slowly
    while client.get_custom_job(name=created.name).state != JobState.JOB_STATE_RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    while len(pids(out)) < 3:  # every replica's program has begun and written its pid
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return created


def pids(out: Path) -> list[int]:
    return [int(line) for path in out.glob("*.pids") for line in path.read_text().split()]


def test_preempting_a_running_spot_job_stops_its_replicas_and_fails_it_with_stockout(
    emu: emulator.Emulator, out: Path
) -> None:
    client = job_client("us-central1")
    created = running(client, out)
    ended = emu.preempt(created.name)  # the replicas loop for ever: it returned by ending them
    assert ended.state == JobState.JOB_STATE_FAILED
    assert ended.error.code == CODE_RESOURCE_EXHAUSTED
    assert ended.error.message.startswith("STOCKOUT: ")
    assert "workerpool0-0, workerpool1-0, workerpool1-1" in ended.error.message
    assert not any(alive(pid) for pid in pids(out))
    assert len(pids(out)) == 3  # no replica restarted, no retry
    assert sorted(p.name for p in out.glob("*.sigterm")) == [
        "workerpool0-0.sigterm",
        "workerpool1-0.sigterm",
        "workerpool1-1.sigterm",
    ]
    got = client.get_custom_job(name=created.name)
    assert got.state == JobState.JOB_STATE_FAILED and got.error.code == CODE_RESOURCE_EXHAUSTED

    with pytest.raises(RpcError) as refused:
        emu.preempt(created.name)
    assert refused.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "JOB_STATE_FAILED" in refused.value.message
    assert client.get_custom_job(name=created.name).update_time == got.update_time


def test_a_standard_job_is_not_preempted(emu: emulator.Emulator, out: Path) -> None:
    client = job_client("us-central1")
    created = running(client, out, "STANDARD")
    with pytest.raises(RpcError) as refused:
        emu.preempt(created.name)
    assert refused.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "strategy is STANDARD; accepted: SPOT, FLEX_START" in refused.value.message
    assert client.get_custom_job(name=created.name).state == JobState.JOB_STATE_RUNNING
    client.cancel_custom_job(name=created.name)
    assert wait_job(client.get_custom_job, created.name, 20).state == JobState.JOB_STATE_CANCELLED


def test_trainpool_jobs_preempt_against_an_emulator_process(
    tmp_path: Path, out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = subprocess.Popen(
        [sys.executable, "-c", "from trainpool.cli import main; main()", "emulator"]
        + ["--root", str(tmp_path / "root")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        address = server.stdout.readline().split()[5]
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", address)
        monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "demo")
        client = job_client("us-central1")
        created = running(client, out, "FLEX_START")
        job_id = created.name.rsplit("/", 1)[1]

        result = CliRunner().invoke(app, ["jobs", "preempt", job_id])
        assert result.exit_code == 0, result.output
        assert result.output.startswith(f"preempted: {created.name} is JOB_STATE_FAILED: STOCKOUT")
        assert client.get_custom_job(name=created.name).error.code == CODE_RESOURCE_EXHAUSTED

        again = CliRunner().invoke(app, ["jobs", "preempt", job_id])
        assert again.exit_code == 1
        assert "FAILED_PRECONDITION" in again.output and "JOB_STATE_FAILED" in again.output
    finally:
        server.terminate()
        server.wait(timeout=30)
