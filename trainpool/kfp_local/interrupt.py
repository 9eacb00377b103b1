"""SIGTERM and SIGINT during a local run: stop the run's tasks, then cancel its jobs.

The run's launcher (:class:`trainpool.kfp_local.launching.Launcher`) starts each task in a
session of its own and is told to stop them (:func:`stopping`); anything else the run
started in its own process group (this process's descendants there) gets the signal too.
A task that launched a job cancels it on SIGTERM; whatever job is left is cancelled by the
caller once kfp.local returns (no RPC runs in a signal handler): ``trainpool run --local``
cancels its run's jobs, the emulator those of a PipelineJob it runs. With no task running,
the handler raises :class:`trainpool.signals.Interrupted` so kfp.local starts no further
task; otherwise :func:`check` stops the next one from starting.

A run that is SIGKILLed can hand nothing on: its launcher's tasks are children of a guard
process that Linux signals when the run dies and that then kills them
(``trainpool.emulator.jobs.replica_guard``).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from trainpool.signals import Interrupted

_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_blocks: list[list[int]] = []
"""The signals seen by each :func:`handed_on` block now open, innermost last."""
_terminators: list[Callable[[], bool]] = []
"""Called on a signal (from the handler): each stops its running tasks, True if it had any."""


def seen() -> int:
    """How many signals the innermost :func:`handed_on` block has seen (0 outside one)."""
    return len(_blocks[-1]) if _blocks else 0


@contextmanager
def terminating(stop: Callable[[], bool]) -> Iterator[None]:
    """Within the block, a signal calls ``stop()`` (from the handler: it may only signal
    processes); it returns whether it had tasks to stop."""
    _terminators.append(stop)
    try:
        yield
    finally:
        _terminators.remove(stop)


def check() -> None:
    """Raise :class:`Interrupted` once the run has had SIGTERM or SIGINT: no task starts
    after it. A task that ends well on SIGTERM (GCPC's launchers cancel their job and exit
    0) would otherwise let kfp.local go on to the next task."""
    if _blocks and _blocks[-1]:
        raise Interrupted(_blocks[-1][0])


def task_processes() -> list[int]:
    """Pids of this process's descendants in its own process group (Linux ``/proc``)."""
    group = os.getpgrp()
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:
            children.setdefault(int(fields[1]), []).append(int(entry.parent.name))
    found, todo = [], [os.getpid()]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


@contextmanager
def handed_on() -> Iterator[list[int]]:
    """Within the block, SIGTERM/SIGINT go on to the running tasks; yields the signals seen."""
    seen: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def handle(signum: int, _frame: FrameType | None) -> None:
        first = not seen
        seen.append(signum)
        children = task_processes()
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        stopped = [stop() for stop in list(_terminators)]
        if first and not children and not any(stopped):
            raise Interrupted(signum)

    previous = {sig: signal.signal(sig, handle) for sig in _SIGNALS}
    _blocks.append(seen)
    try:
        yield seen
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        _blocks.pop()  # blocks nest: this one is the innermost
