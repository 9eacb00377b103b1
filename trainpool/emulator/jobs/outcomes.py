"""How a job's replicas ended: an :class:`Outcome`, the one a cancel or a stop asks for, and
the message of a replica that failed (Vertex's first line, then the tail of its log)."""

from __future__ import annotations

from dataclasses import dataclass

from trainpool.emulator.jobs import processes
from trainpool.emulator.jobs.controls import Controls
from trainpool.emulator.jobs.failure_rules import CODE_CANCELLED, exit_message
from trainpool.emulator.jobs.processes import Replica


@dataclass(frozen=True)
class Outcome:
    """How the replicas ended: ``state`` is "SUCCEEDED", "FAILED" or "CANCELLED"."""

    state: str
    code: int = 0
    message: str = ""


def failure_message(replica: Replica, status: int, detail: str = "") -> str:
    """Vertex's first line, then the emulator's ``detail`` and the tail of the replica's log."""
    message = exit_message(replica.launch.name, status, replica.out_of_memory)
    if detail:
        message += f"\n{detail}"
    log_tail = processes.tail(replica.launch.log)
    if log_tail:
        message += f"\nLast lines of {replica.launch.log}:\n{log_tail}"
    return message


def controlled(controls: Controls) -> Outcome | None:
    """The outcome a cancel or a stop asks for (None: neither is set)."""
    if controls.cancel.is_set():
        return Outcome("CANCELLED", CODE_CANCELLED, "CANCELED")
    if controls.stop.is_set():
        return Outcome("CANCELLED", CODE_CANCELLED, controls.stop.reason)
    return None
