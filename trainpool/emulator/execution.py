"""Run the replicas of one CustomJob (or one trial) to an outcome, by Vertex's rules.

- Any replica of pool 0 or 1 exiting non-zero fails the job; every other replica is stopped.
- When pools 0 and 1 have all exited 0 the job succeeded; evaluators (pool 3) get
  ``EVALUATOR_GRACE_S`` to finish their last evaluation, parameter servers are stopped.
- Cancel stops every replica (SIGTERM, then SIGKILL) and ends CANCELLED.
- ``scheduling.timeout`` passing stops every replica and fails the job.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from trainpool.emulator import processes
from trainpool.emulator.processes import Launch, Replica

POLL_S = 0.05
EVALUATOR_GRACE_S = 10.0
DRIVERS = (0, 1)

# google.rpc.Code values Vertex puts in CustomJob.error
CODE_CANCELLED = 1
CODE_INVALID_ARGUMENT = 3
CODE_DEADLINE_EXCEEDED = 4
CODE_INTERNAL = 13


@dataclass(frozen=True)
class Outcome:
    """How the replicas ended: ``state`` is "SUCCEEDED", "FAILED" or "CANCELLED"."""

    state: str
    code: int = 0
    message: str = ""


@dataclass(frozen=True)
class KillFault:
    """Test fault: SIGKILL replica ``replica`` (``workerpool1-0``) ``after_s`` after its start."""

    replica: str
    after_s: float


def failure_message(replica: Replica, status: int) -> str:
    log_tail = processes.tail(replica.launch.log)
    message = (
        f"The replica {replica.launch.name} exited with a non-zero status of {status}. "
        "Termination reason: Error."
    )
    if log_tail:
        message += f"\nLast lines of {replica.launch.log}:\n{log_tail}"
    return message


def run_replicas(
    launches: list[Launch],
    *,
    cancel: threading.Event,
    timeout_s: float | None = None,
    on_started: Callable[[list[Replica]], None] = lambda _: None,
    kill: KillFault | None = None,
) -> Outcome:
    """Start every launch, watch them, stop them all, and say how the job ended.

    Whatever ends the run (an outcome, a start that fails, ``on_started`` raising), no
    replica is left running; a run cancelled before it starts starts nothing.
    """
    if cancel.is_set():
        return Outcome("CANCELLED", CODE_CANCELLED, "CANCELED")
    replicas: list[Replica] = []
    try:
        for launch in launches:
            try:
                replicas.append(processes.start(launch))
            except OSError as err:
                return Outcome(
                    "FAILED", CODE_INVALID_ARGUMENT, f"Cannot start {launch.name}: {err}"
                )
        on_started(replicas)
        return _watch(replicas, cancel, timeout_s, kill)
    finally:
        processes.stop(replicas)


def _watch(
    replicas: list[Replica],
    cancel: threading.Event,
    timeout_s: float | None,
    kill: KillFault | None,
) -> Outcome:
    began = time.monotonic()
    drivers = [r for r in replicas if r.launch.pool in DRIVERS]
    evaluators = [r for r in replicas if r.launch.pool == 3]
    finished_at: float | None = None
    while True:
        if cancel.is_set():
            return Outcome("CANCELLED", CODE_CANCELLED, "CANCELED")
        if timeout_s is not None and time.monotonic() - began > timeout_s:
            return Outcome(
                "FAILED", CODE_DEADLINE_EXCEEDED, f"The job exceeded its timeout of {timeout_s:g}s."
            )
        if kill is not None:
            _apply_kill(replicas, kill)
        for replica in drivers:
            status = replica.exit_status()
            if status not in (None, 0):
                return Outcome("FAILED", CODE_INVALID_ARGUMENT, failure_message(replica, status))
        if finished_at is None and all(r.exit_status() == 0 for r in drivers):
            finished_at = time.monotonic()
        if finished_at is not None:
            evaluating = any(r.exit_status() is None for r in evaluators)
            if not evaluating or time.monotonic() - finished_at > EVALUATOR_GRACE_S:
                return Outcome("SUCCEEDED")
        cancel.wait(POLL_S)


def _apply_kill(replicas: list[Replica], kill: KillFault) -> None:
    for replica in replicas:
        if replica.launch.name == kill.replica and replica.exit_status() is None:
            if time.monotonic() - replica.started >= kill.after_s:
                processes.signal_group(replica.pgid, signal.SIGKILL)
