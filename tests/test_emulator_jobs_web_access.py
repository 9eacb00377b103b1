"""A shell into each running replica, as Vertex's interactive shell (emulator/jobs/web_access.py).

``CustomJobSpec.enable_web_access``: "Whether you want Vertex AI to enable interactive shell
access to training containers"; ``CustomJob.web_access_uris``: "URIs for accessing
interactive shells (one URI for each training node)... The keys are names of each node in
the training job; for example, workerpool0-0 for the primary node" (aiplatform v1
custom_job.proto; https://cloud.google.com/vertex-ai/docs/training/monitor-debug-interactive-shell).
"""

from __future__ import annotations

import os
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.emulator.jobs import web_access
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with emulator.start(tmp_path / "root") as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        yield job_client("us-central1")


def shell(uri: str, commands: str) -> str:
    """What a shell at ``uri`` prints for ``commands`` (then ``exit``)."""
    path = uri.removeprefix(web_access.SCHEME)
    here = os.getcwd()
    os.chdir(os.path.dirname(path))  # a socket's address is limited to 107 bytes
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(os.path.basename(path))
    finally:
        os.chdir(here)
    conn.sendall(f"{commands}\nexit\n".encode())
    seen = b""
    conn.settimeout(20)
    while True:
        data = conn.recv(65536)
        if not data:
            return seen.decode(errors="replace")
        seen += data


def test_each_replica_serves_a_shell_in_its_directory_and_environment(
    client: Any, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    wait = f'while [ ! -e "{go}" ]; do sleep 0.05; done; exit 0'
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": "python:3.11", "command": ["sh", "-c", wait]},
    }
    spec = {"worker_pool_specs": [pool, {**pool, "replica_count": 2}], "enable_web_access": True}
    job = client.create_custom_job(
        parent=PARENT, custom_job={"display_name": "shell", "job_spec": spec}
    )
    deadline = time.monotonic() + 30
    while (got := client.get_custom_job(name=job.name)).state != JobState.JOB_STATE_RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    uris = dict(got.web_access_uris)
    assert sorted(uris) == ["workerpool0-0", "workerpool1-0", "workerpool1-1"]
    job_dir = tmp_path.resolve() / "root/jobs" / job.name.rsplit("/", 1)[1]
    for name, uri in uris.items():
        path = Path(uri.removeprefix(web_access.SCHEME))
        assert path == job_dir / "web-access" / f"{name}.sock"
        deadline = time.monotonic() + 10
        while not path.exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600  # the owner's alone
    said = shell(uris["workerpool1-1"], 'echo "at $(pwd) as $CLOUD_ML_JOB_ID"; ls /gcs >/dev/null')
    job_id = job.name.rsplit("/", 1)[1]
    assert f"at {job_dir}/work/workerpool1-1 as {job_id}" in said
    go.touch()
    done = wait_job(client.get_custom_job, job.name, 30)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error.message
    assert not (job_dir / "web-access" / "workerpool0-0.sock").exists()
    assert (
        "enableWebAccess: each replica serves an interactive shell"
        in (job_dir / "job.log").read_text()
    )


def test_the_replica_ends_as_its_command_does(client: Any) -> None:
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": "python:3.11", "command": ["sh", "-c", "exit 1"]},
    }
    spec = {"worker_pool_specs": [pool], "enable_web_access": True}
    job = client.create_custom_job(
        parent=PARENT, custom_job={"display_name": "e", "job_spec": spec}
    )
    done = wait_job(client.get_custom_job, job.name, 30)
    assert done.state == JobState.JOB_STATE_FAILED
    assert "workerpool0-0 exited with a non-zero status of 1" in done.error.message
