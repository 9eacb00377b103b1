"""JobLauncher against the emulator over real gRPC: re-attach, label recovery, faults, signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.vertex import PARENT

import trainpool.emulator as emulator
from trainpool.vertex import jobs, labels, resources, retry
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(120)

FAST = retry.Backoff(initial=0.05, maximum=0.2, attempts=12)
POLL = jobs.Poll(initial=0.2, maximum=0.5)


def job(seconds: float, task: str = "") -> dict[str, Any]:
    command = ["python3", "-c", f"import time; time.sleep({seconds})"]
    pool = {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": 1,
        "containerSpec": {"imageUri": "local/sleeper:1", "command": command},
    }
    rest = {"displayName": "sleep", "jobSpec": {"workerPoolSpecs": [pool]}}
    if task:
        rest["labels"] = labels.job_labels({}, task)
    return rest


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path / "root") as running:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", running.address)
        yield running


def job_launcher(log: list[str] | None = None) -> jobs.JobLauncher:
    sink = log.append if log is not None else print
    return jobs.JobLauncher(
        jobs.CUSTOM_JOB, project="demo", location="us-central1", backoff=FAST, poll=POLL, log=sink
    )


def all_jobs() -> list[Any]:
    return list(job_client("us-central1").list_custom_jobs(parent=PARENT))


def test_run_creates_writes_gcp_resources_and_follows_to_success(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    out = tmp_path / "gcp_resources"
    log: list[str] = []
    final = job_launcher(log).run(jobs.from_rest(jobs.CUSTOM_JOB, job(0.2, "77")), str(out), "77")
    name = final.name
    assert jobs.state_name(final) == "JOB_STATE_SUCCEEDED"
    assert json.loads(out.read_text()) == {
        "resources": [
            {
                "resourceType": "CustomJob",
                "resourceUri": f"https://us-central1-aiplatform.googleapis.com/v1/{name}",
            }
        ]
    }
    assert log[0] == f"created {name} (attempt 1)"
    assert final.labels["trainpool-attempt"] == "1"
    assert log[-1].startswith(f"{name}: JOB_STATE_SUCCEEDED")
    assert [j.name for j in all_jobs()] == [name]


def test_existing_gcp_resources_re_attaches_without_creating(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    first = job_client("us-central1").create_custom_job(
        parent=PARENT, custom_job=jobs.from_rest(jobs.CUSTOM_JOB, job(0.2))
    )
    out = tmp_path / "gcp_resources"
    resources.write(out, "CustomJob", first.name, "us-central1")
    final = job_launcher().run(jobs.from_rest(jobs.CUSTOM_JOB, job(0.2, "5")), str(out), "5")
    assert final.name == first.name
    assert [j.name for j in all_jobs()] == [first.name]


def test_job_labelled_with_the_task_is_found_after_a_crash_before_gcp_resources(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    orphan = job_client("us-central1").create_custom_job(
        parent=PARENT, custom_job=jobs.from_rest(jobs.CUSTOM_JOB, job(0.2, "task-9"))
    )
    out = tmp_path / "gcp_resources"
    log: list[str] = []
    final = job_launcher(log).run(
        jobs.from_rest(jobs.CUSTOM_JOB, job(0.2, "task-9")), str(out), "task-9"
    )
    assert final.name == orphan.name
    assert log[0] == f"re-attaching to {orphan.name} (labelled trainpool-task=task-9)"
    assert resources.read(out, "CustomJob") == orphan.name
    assert len(all_jobs()) == 1


def failing(task: str) -> dict[str, Any]:
    rest = job(0.0, task)
    rest["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["command"] = ["false"]
    rest["jobSpec"]["scheduling"] = {"disableRetries": True}  # fail at once, no restarts
    return rest


def wait_state(name: str, state: str) -> None:
    for _ in range(100):
        if job_client("us-central1").get_custom_job(name=name).state.name == state:
            return
        time.sleep(0.1)
    raise AssertionError(f"{name} never reached {state}")


def test_a_retry_after_failure_creates_the_next_attempt_and_trains_again(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    out = tmp_path / "gcp_resources"
    first = job_launcher().run(jobs.from_rest(jobs.CUSTOM_JOB, failing("t-1")), str(out), "t-1")
    assert jobs.state_name(first) == "JOB_STATE_FAILED"
    log: list[str] = []  # the KFP retry: same task, same gcp_resources naming the failed job
    second = job_launcher(log).run(
        jobs.from_rest(jobs.CUSTOM_JOB, job(0.2, "t-1")), str(out), "t-1"
    )
    assert second.name != first.name and jobs.state_name(second) == "JOB_STATE_SUCCEEDED"
    assert second.labels["trainpool-attempt"] == "2"
    assert f"created {second.name} (attempt 2)" in log
    assert resources.read(out, "CustomJob") == second.name, "gcp_resources names the new job"
    assert len(all_jobs()) == 2


def test_a_rerun_while_the_job_runs_adopts_it_and_cancels_duplicates(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    client = job_client("us-central1")
    made = [
        client.create_custom_job(
            parent=PARENT, custom_job=jobs.from_rest(jobs.CUSTOM_JOB, job(30, "t-2"))
        )
        for _ in range(2)  # two jobs of one attempt (say, a create retried blind)
    ]
    for created in made:
        wait_state(created.name, "JOB_STATE_RUNNING")
    found = job_launcher().find("t-2")
    assert found == made[0].name, "the oldest live job of the attempt is adopted"
    wait_state(made[1].name, "JOB_STATE_CANCELLED")
    assert client.get_custom_job(name=made[0].name).state.name == "JOB_STATE_RUNNING"
    assert len(all_jobs()) == 2, "nothing new created"
    job_launcher().cancel(made[0].name)


def test_a_third_of_calls_unavailable_still_creates_exactly_one_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    faults = emulator.Faults(unavailable_rate=1 / 3, seed=7)
    with emulator.start(tmp_path / "root", faults=faults) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        log: list[str] = []
        out = tmp_path / "gcp_resources"
        final = job_launcher(log).run(
            jobs.from_rest(jobs.CUSTOM_JOB, job(0.5, "42")), str(out), "42"
        )
        assert jobs.state_name(final) == "JOB_STATE_SUCCEEDED"
        assert any("UNAVAILABLE" in line for line in log)
        listed = retry.call("list", all_jobs, FAST, print)
        assert [j.name for j in listed] == [final.name]


def test_other_errors_fail_at_once_with_the_servers_message(emu: emulator.Emulator) -> None:
    bad = job(0.1)
    bad["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] = 2
    log: list[str] = []
    with pytest.raises(retry.VertexError) as err:
        job_launcher(log).create(jobs.from_rest(jobs.CUSTOM_JOB, bad), "")
    assert str(err.value).startswith("CreateCustomJob: INVALID_ARGUMENT: ")
    assert "replicaCount" in str(err.value)
    assert log == []
    assert all_jobs() == []


LAUNCHER = """
import sys
from trainpool.vertex import jobs, retry
job = jobs.from_rest(jobs.CUSTOM_JOB, {job!r})
launcher = jobs.JobLauncher(jobs.CUSTOM_JOB, project="demo", location="us-central1",
                        poll=jobs.Poll(initial=0.2, maximum=0.5))
final = launcher.run(job, sys.argv[1], "launcher-task")
print("FINAL", jobs.state_name(final))
"""


def launcher(out: Path, seconds: float) -> subprocess.Popen[str]:
    code = LAUNCHER.format(job=job(seconds, "launcher-task"))
    return subprocess.Popen(
        [sys.executable, "-c", code, str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ),
    )


def wait_for(path: Path, limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while not (path.exists() and path.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert path.exists(), f"{path} never written"


def test_sigterm_cancels_the_job_and_exits_non_zero(emu: emulator.Emulator, tmp_path: Path) -> None:
    out = tmp_path / "gcp_resources"
    proc = launcher(out, 60)
    wait_for(out)
    name = resources.read(out, "CustomJob")
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert f"JobInterrupted: received SIGTERM; cancelled {name}: JOB_STATE_CANCELLED" in output
    got = job_client("us-central1").get_custom_job(name=name)
    assert got.state.name == "JOB_STATE_CANCELLED"


def test_a_killed_launcher_re_run_re_attaches(emu: emulator.Emulator, tmp_path: Path) -> None:
    out = tmp_path / "gcp_resources"
    first = launcher(out, 3)
    wait_for(out)
    first.kill()
    first.communicate(timeout=30)
    second = launcher(out, 3)
    output, _ = second.communicate(timeout=60)
    name = resources.read(out, "CustomJob")
    assert second.returncode == 0, output
    assert f"re-attaching to {name} (named in {out})" in output
    assert "FINAL JOB_STATE_SUCCEEDED" in output
    assert [j.name for j in all_jobs()] == [name]


def test_sigterm_during_create_cancels_the_job_the_create_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server takes 3 s to answer Create; SIGTERM lands while the call is in flight.
    # The job the call makes must still be cancelled, not left running unowned.
    faults = emulator.Faults(delay_s=3.0, methods=("CreateCustomJob",))
    with emulator.start(tmp_path / "root", faults=faults) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        out = tmp_path / "gcp_resources"
        code = LAUNCHER.format(job=job(60, "launcher-task")).replace(
            "final = ", "print('READY', flush=True)\nfinal = "
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=dict(os.environ),
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "READY"
        time.sleep(1.5)  # the label lookup answered, Create in flight
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
        assert proc.returncode != 0, output
        time.sleep(3.5)  # past the server's delay: a Create still in flight has landed by now
        listed = all_jobs()
        assert len(listed) == 1, output
        assert listed[0].state.name == "JOB_STATE_CANCELLED", output
        assert f"cancelled {listed[0].name}: JOB_STATE_CANCELLED" in output
