"""One emulator per root: a second server on the same root is refused and touches nothing."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.emulator import root_lock
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(60)


def sleeper() -> dict[str, object]:
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": "local/none", "command": ["sleep", "60"]},
    }
    return {"display_name": "sleeper", "job_spec": {"worker_pool_specs": [pool]}}


def test_a_second_server_on_a_root_is_refused_and_the_first_keeps_its_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    with emulator.start(root) as first:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", first.address)
        client = job_client("us-central1")
        job = client.create_custom_job(parent=PARENT, custom_job=sleeper())
        deadline = time.monotonic() + 15
        while client.get_custom_job(name=job.name).state != JobState.JOB_STATE_RUNNING:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with pytest.raises(root_lock.RootInUse) as refused:
            emulator.start(root)
        assert str(root.resolve()) in str(refused.value)
        assert first.address in str(refused.value)
        cli = subprocess.run(
            [sys.executable, "-c", "from trainpool.cli import main; main()", "emulator"]
            + ["--root", str(root)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert cli.returncode == 2
        assert f"is served by the emulator at {first.address}" in cli.stderr
        assert client.get_custom_job(name=job.name).state == JobState.JOB_STATE_RUNNING
        assert root_lock.running(root) == first.address
    assert root_lock.running(root) is None
    with emulator.start(root):  # released at stop: the root can be served again
        pass
