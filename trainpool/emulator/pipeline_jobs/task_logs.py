"""A pipeline task's log (``<run>/tasks/<task>_<id>/task.log``): the notes of its start
first, then its output, followed line by line as the task writes it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from trainpool.emulator.jobs.processes import Replica
from trainpool.emulator.records.database import low_space
from trainpool.kfp_local.launching import TaskStart


def follow(replica: Replica, log: Path, offset: int, say: Callable[[str], None]) -> int:
    """Each line ``replica`` writes to ``log`` after ``offset`` to ``say`` as it comes; its
    exit status."""
    pending = b""
    with open(log, "rb") as handle:
        handle.seek(offset)
        while True:
            status = replica.wait(0.05)
            pending += handle.read()
            *lines, pending = pending.split(b"\n")
            for line in lines:
                say(line.decode("utf-8", "replace"))
            if status is not None:
                if pending:
                    say(pending.decode("utf-8", "replace"))
                lost = replica.output_lost or (full_disk(log) if status != 0 else "")
                if lost:  # a task never ends SUCCEEDED with its output missing
                    say(f"the task failed: {lost}; free some space and run it again")
                    return status or 1
                return status


def full_disk(log: Path) -> str:
    """The disk of ``log`` named when it is full (below the store's reserve), else ""."""
    free = low_space(log.parent)
    if free is None:
        return ""
    return f"No space left on the disk of {log.parent} ({free} bytes free when the task ended)"


def append(log: Path, lines: list[str]) -> None:
    if lines:
        with open(log, "a", encoding="utf-8") as handle:
            handle.writelines(f"{line}\n" for line in lines)


def write_notes(log: Path, task: TaskStart, say: Callable[[str], None], what: str) -> int:
    """The task's notes and its Python, first in its log (and said); where its output starts."""
    lines = [*task.notes, f"image {what}"]
    for line in lines:
        say(line)
    append(log, lines)
    return log.stat().st_size
