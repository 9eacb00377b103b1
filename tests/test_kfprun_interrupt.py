"""SIGTERM of `trainpool run --local`: the run's jobs end CANCELLED and it exits non-zero."""

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
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(120)
PARENT = "projects/demo-project/locations/us-central1"


def replica_running(root: Path) -> bool:
    log = root / "jobs" / "1000" / "workerpool0-0.log"
    return log.is_file() and "cancel me" in log.read_text()


def test_sigterm_cancels_the_runs_jobs_and_exits_non_zero(tmp_path: Path) -> None:
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
