"""run_replicas on real processes: nothing of a job is left running, whatever ends it."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from trainpool.emulator.jobs.failure_rules import CODE_CANCELLED
from trainpool.emulator.jobs.processes import Launch, Replica
from trainpool.emulator.jobs.replicas import Outcome, Stop, run_replicas

pytestmark = pytest.mark.timeout(60)

SLEEPER = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)"


def sleeper(tmp_path: Path, name: str) -> Launch:
    pid_file = tmp_path / f"{name}.pid"
    argv = [sys.executable, "-c", SLEEPER, str(pid_file)]
    return Launch(name, 0, argv, dict(os.environ), tmp_path, tmp_path / f"{name}.log")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_replicas_are_stopped_when_recording_their_start_fails(tmp_path: Path) -> None:
    # on_started records the process groups (SQLite); if that raises, for instance because
    # the emulator closed its database while stopping, the replicas must not be left behind.
    started: list[Replica] = []

    def record(replicas: list[Replica]) -> None:
        started.extend(replicas)
        deadline = time.monotonic() + 10
        while not (tmp_path / "workerpool0-0.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        raise RuntimeError("Cannot operate on a closed database.")

    with pytest.raises(RuntimeError):
        run_replicas(
            [sleeper(tmp_path, "workerpool0-0")], cancel=threading.Event(), on_started=record
        )
    pid = int((tmp_path / "workerpool0-0.pid").read_text())
    left = alive(pid)
    if left:
        os.killpg(pid, signal.SIGKILL)
        started[0].wait()
    assert started and not left


def test_a_job_cancelled_before_its_replicas_start_starts_none(tmp_path: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    outcome = run_replicas([sleeper(tmp_path, "workerpool0-0")], cancel=cancel)
    assert outcome.state == "CANCELLED"
    assert not (tmp_path / "workerpool0-0.log").exists()


def test_a_stop_ends_the_job_cancelled_with_its_reason_and_no_replica_left(tmp_path: Path) -> None:
    stop = Stop()
    stopper = threading.Thread(target=lambda: (time.sleep(0.5), stop.set("rule says stop")))
    stopper.start()
    outcome = run_replicas(
        [sleeper(tmp_path, "workerpool0-0")], cancel=threading.Event(), stop=stop
    )
    stopper.join()
    assert outcome == Outcome("CANCELLED", CODE_CANCELLED, "rule says stop")
    assert not alive(int((tmp_path / "workerpool0-0.pid").read_text()))
    stop.set("a second reason")  # set once: the first reason stays
    assert stop.reason == "rule says stop"


def test_a_job_stopped_before_its_replicas_start_starts_none(tmp_path: Path) -> None:
    stop = Stop()
    stop.set("stopped early")
    outcome = run_replicas(
        [sleeper(tmp_path, "workerpool0-0")], cancel=threading.Event(), stop=stop
    )
    assert outcome == Outcome("CANCELLED", CODE_CANCELLED, "stopped early")
    assert not (tmp_path / "workerpool0-0.log").exists()
