"""JobReplicas on real processes: nothing of a job is left running, whatever ends it.

``run_replicas`` drives one run to its end in the calling thread, as the job engine drives
it on its pool (begin, then step whenever a replica exits or a control is set)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from trainpool.emulator.faults.config import KillFault
from trainpool.emulator.jobs.controls import Controls, Flag, Stop
from trainpool.emulator.jobs.failure_rules import CODE_CANCELLED, RetryPolicy
from trainpool.emulator.jobs.outcomes import Outcome
from trainpool.emulator.jobs.processes import Launch, Replica
from trainpool.emulator.jobs.replicas import JobReplicas
from trainpool.emulator.jobs.runners import HOST_PROCESSES, ReplicaRunner

pytestmark = pytest.mark.timeout(60)

POLL_S = 0.05
"""How often the driver looks at controls that cannot wake it (plain Events)."""

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


def run_replicas(
    launches: list[Launch],
    *,
    cancel: threading.Event,
    policy: RetryPolicy | None = None,
    timeout_s: float | None = None,
    on_started: Callable[[list[Replica]], None] = lambda _: None,
    on_running: Callable[[], None] = lambda: None,
    note: Callable[[str], None] = lambda _: None,
    kill: KillFault | None = None,
    preempt: threading.Event | None = None,
    stop: Stop | None = None,
    clock: Callable[[], float] = time.monotonic,
    runner: ReplicaRunner = HOST_PROCESSES,
) -> Outcome:
    """Start every launch, watch, restart and stop them, and say how the run ended, in the
    calling thread.

    ``on_started`` gets every set of processes started (first start and restarts);
    ``on_running`` is called once, when every replica has started; ``preempt`` set ends
    the run preempted; ``stop`` set ends it CANCELLED with its reason; ``timeout_s`` is
    measured with ``clock``. Whatever ends the run
    (an outcome, a start that fails, a callback raising), no replica is left running; a
    run cancelled before it starts starts nothing.
    """
    controls = Controls(cancel, preempt or Flag(), stop or Stop())  # type: ignore[arg-type]
    changed = threading.Event()
    run = JobReplicas(
        launches,
        controls,
        policy=policy,
        timeout_s=timeout_s,
        on_started=on_started,
        note=note,
        kill=kill,
        wake=changed.set,
        clock=clock,
        runner=runner,
    )
    try:
        outcome = run.begin()
        if outcome is not None:
            return outcome
        on_running()
        while True:
            changed.clear()
            outcome = run.step()
            if outcome is not None:
                return outcome
            due = run.next_wake()
            wait = POLL_S if due is None else min(POLL_S, max(0.0, due - time.monotonic()))
            changed.wait(wait)
    finally:
        run.close()
