"""The emulator as a server process: restart after a crash, clean stop, the CLI's flags."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(60)

SLEEPER = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"


def sleeper_job(pid_file: Path) -> dict[str, Any]:
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {
            "image_uri": "local/none",
            "command": [sys.executable, "-c", SLEEPER, str(pid_file)],
        },
    }
    return {"display_name": "sleeper", "job_spec": {"worker_pool_specs": [pool]}}


@pytest.fixture
def cli_server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", "from trainpool.cli import main; main()", "emulator"]
        + ["--root", str(tmp_path / "root")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("Vertex AI emulator listening on unix:/"), line
    yield proc, line.split()[5]
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def wait_for(predicate: Any, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def pid_gone(pid: int) -> bool:
    """No such process, or a zombie nobody reaped (a container's pid 1 may not reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_restart_after_crash_marks_running_jobs_failed_and_keeps_every_record(
    cli_server: tuple[subprocess.Popen[str], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proc, address = cli_server
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", address)
    client = job_client("us-central1")
    quick = sleeper_job(tmp_path / "unused")
    quick["job_spec"]["worker_pool_specs"][0]["container_spec"]["command"] = [
        sys.executable,
        "-c",
        "pass",
    ]
    finished = client.create_custom_job(parent=PARENT, custom_job=quick)
    wait_for(lambda: client.get_custom_job(name=finished.name).state.name == "JOB_STATE_SUCCEEDED")
    running = client.create_custom_job(parent=PARENT, custom_job=sleeper_job(tmp_path / "pid"))
    wait_for(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text() != "")
    wait_for(lambda: client.get_custom_job(name=running.name).state == JobState.JOB_STATE_RUNNING)
    replica_pid = int((tmp_path / "pid").read_text())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    wait_for(lambda: pid_gone(replica_pid), timeout=5)  # the replica ended with its server

    with emulator.start(tmp_path / "root") as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        after = client.get_custom_job(name=running.name)
        assert after.state == JobState.JOB_STATE_FAILED
        assert after.error.code == 13
        assert after.error.message.startswith("The emulator ended while this job was running")
        assert after.create_time == running.create_time
        assert after.end_time > after.start_time
        listed = {j.name: j.state.name for j in client.list_custom_jobs(parent=PARENT)}
        assert listed == {finished.name: "JOB_STATE_SUCCEEDED", running.name: "JOB_STATE_FAILED"}
        third = client.create_custom_job(parent=PARENT, custom_job=quick)
        assert third.name == f"{PARENT}/customJobs/1002"


def test_after_a_restart_a_failed_sweeps_trials_and_their_jobs_agree_with_it(
    cli_server: tuple[subprocess.Popen[str], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Trial.State has no FAILED: a trial that cannot complete is INFEASIBLE with its reason
    # (aiplatform_v1 study.py), as the emulator marks the trials of a cancelled sweep.
    proc, address = cli_server
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", address)
    client = job_client("us-central1")
    trial_job = sleeper_job(tmp_path / "unused")["job_spec"]
    trial_job["worker_pool_specs"][0]["container_spec"]["command"] = ["sh", "-c", "sleep 600"]
    study = {
        "metrics": [{"metric_id": "m", "goal": "MAXIMIZE"}],
        "parameters": [
            {"parameter_id": "x", "integer_value_spec": {"min_value": 1, "max_value": 4}}
        ],
        "algorithm": "GRID_SEARCH",
    }
    sweep = client.create_hyperparameter_tuning_job(
        parent=PARENT,
        hyperparameter_tuning_job={
            "display_name": "sweep",
            "max_trial_count": 4,
            "parallel_trial_count": 2,
            "study_spec": study,
            "trial_job_spec": trial_job,
        },
    )

    def running_trials() -> int:
        jobs = client.list_custom_jobs(parent=PARENT)
        return sum(j.state == JobState.JOB_STATE_RUNNING for j in jobs)

    wait_for(lambda: running_trials() == 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with emulator.start(tmp_path / "root") as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        after = client.get_hyperparameter_tuning_job(name=sweep.name)
        trial_jobs = list(client.list_custom_jobs(parent=PARENT))
    assert after.state == JobState.JOB_STATE_FAILED and after.error.code == 13
    assert len(after.trials) == 2
    for trial in after.trials:
        assert trial.state == trial.State.INFEASIBLE, trial
        assert trial.infeasible_reason.startswith("The emulator ended while this job was running")
        assert trial.end_time
    assert sorted(j.name for j in trial_jobs) == sorted(t.custom_job for t in after.trials)
    assert all(j.state == JobState.JOB_STATE_FAILED and j.error.code == 13 for j in trial_jobs)


def test_sigterm_stops_the_server_and_its_jobs(
    cli_server: tuple[subprocess.Popen[str], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proc, address = cli_server
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", address)
    client = job_client("us-central1")
    job = client.create_custom_job(parent=PARENT, custom_job=sleeper_job(tmp_path / "pid"))
    wait_for(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text() != "")
    replica_pid = int((tmp_path / "pid").read_text())
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == 0
    assert pid_gone(replica_pid)
    with emulator.start(tmp_path / "root") as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        after = job_client("us-central1").get_custom_job(name=job.name)
    assert after.state == JobState.JOB_STATE_FAILED
    assert after.error.message.startswith("The emulator was closed while this job was running")


def test_cli_refuses_bad_fault_flags(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", "from trainpool.cli import main; main()", "emulator"]
        + ["--root", str(tmp_path), "--unavailable-rate", "2"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "unavailable_rate: 2.0; accepted: a share from 0.0 to 1.0" in result.stderr
    assert not (tmp_path / "emulator.sqlite").exists()


def test_port_in_use_is_refused(tmp_path: Path) -> None:
    with emulator.start(tmp_path / "a", port=0) as first:
        assert first.address == f"127.0.0.1:{first.port}"
        with pytest.raises(OSError, match=f"port: {first.port}: cannot listen on 127.0.0.1"):
            emulator.start(tmp_path / "b", port=first.port)
    with pytest.raises(ValueError, match="port: 70000; accepted: 0"):
        emulator.start(tmp_path / "c", port=70000)


FAMILY = (
    "import subprocess, sys, time; "
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
    "open(sys.argv[1], 'a').write(f'{child.pid}\\n'); "
    "open(sys.argv[1], 'a').write(f'{__import__(\"os\").getpid()}\\n'); time.sleep(600)"
)


def test_sigkill_of_the_server_leaves_no_replica_or_replica_child_running(
    cli_server: tuple[subprocess.Popen[str], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proc, address = cli_server
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", address)
    pids = tmp_path / "pids"
    job = sleeper_job(pids)
    pools = job["job_spec"]["worker_pool_specs"]
    pools[0]["container_spec"]["command"] = [sys.executable, "-c", FAMILY, str(pids)]
    pools.append({**pools[0], "replica_count": 2})
    job_client("us-central1").create_custom_job(parent=PARENT, custom_job=job)
    wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 6)
    every = [int(p) for p in pids.read_text().split()]
    assert not any(pid_gone(pid) for pid in every)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    wait_for(lambda: all(pid_gone(pid) for pid in every), timeout=5)


def _record(root: Path, pid: int, start_ticks: int, boot_id: str) -> None:
    db = sqlite3.connect(root / "emulator.sqlite")
    with db:
        db.execute(
            "INSERT INTO replica_processes (job, replica, pid, start_ticks, boot_id) "
            "VALUES (?, ?, ?, ?, ?)",
            (f"{PARENT}/customJobs/1", "workerpool0-0", pid, start_ticks, boot_id),
        )
    db.close()


def test_recovery_stops_only_processes_it_can_prove_are_its_own(tmp_path: Path) -> None:
    from trainpool.emulator.jobs.processes import identify

    with emulator.start(tmp_path / "root"):
        pass
    survivor = subprocess.Popen(["sleep", "60"], start_new_session=True)
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        mine, theirs = identify(survivor.pid), identify(stranger.pid)
        assert mine is not None and theirs is not None
        _record(tmp_path / "root", mine.pid, mine.start_ticks, mine.boot_id)
        # the stranger holds a pid the dead server recorded for a process started earlier
        _record(tmp_path / "root", theirs.pid, theirs.start_ticks - 1, theirs.boot_id)
        with emulator.start(tmp_path / "root"):
            time.sleep(0.3)
        assert survivor.wait(timeout=5) is not None, "a recorded survivor is stopped"
        assert stranger.poll() is None, "recovery signalled a process it did not start"
    finally:
        for proc in (survivor, stranger):
            proc.kill()
            proc.wait()
