"""SIGTERM and SIGINT during a local run: stop the run's tasks, then cancel its jobs.

kfp.local runs each task as a child process (``sh`` starting Python) and waits
for it, so the signal is handed on to the task's whole process tree: this
process's descendants in its own process group (the emulator's replicas run in
sessions of their own and are not touched). A task that launched a job cancels it
on SIGTERM; whatever job is left is cancelled by the caller once kfp.local returns
(no RPC runs in a signal handler): ``trainpool run --local`` cancels its run's jobs, the
emulator those of a PipelineJob it runs.
With no task running, the handler raises :class:`trainpool.signals.Interrupted` so
kfp.local starts no further task.

A run that is SIGKILLed can hand nothing on: each task runs under
:mod:`trainpool.kfprun.task_guard` (:func:`guarded`), which Linux signals when the run dies,
and which then ends the task's processes (SIGTERM, SIGKILL after 2 s).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from trainpool.signals import Interrupted

_SIGNALS = (signal.SIGTERM, signal.SIGINT)
TASK_GUARD = Path(__file__).with_name("task_guard.py")


def guarded(command: list[str]) -> list[str]:
    """``command`` run under the task guard: it ends with this process, SIGKILL included."""
    return [sys.executable, "-I", "-S", str(TASK_GUARD), str(os.getpid()), *command]


_spared: set[int] = set()
_blocks: list[list[int]] = []
"""The signals seen by each :func:`handed_on` block now open, innermost last."""


def check() -> None:
    """Raise :class:`Interrupted` once the run has had SIGTERM or SIGINT: no task starts
    after it. A task that ends well on SIGTERM (GCPC's launchers cancel their job and exit
    0) would otherwise let kfp.local go on to the next task."""
    if _blocks and _blocks[-1]:
        raise Interrupted(_blocks[-1][0])


def spare(pid: int) -> None:
    """Leave child ``pid`` and its descendants out of :func:`task_processes`: a process
    started ahead of its task (:mod:`trainpool.kfprun.warm`) is no running task."""
    _spared.add(pid)


def unspare(pid: int) -> None:
    _spared.discard(pid)


def task_processes() -> list[int]:
    """Pids of this process's descendants in its own process group (Linux ``/proc``), but
    those :func:`spare` leaves out."""
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
        kids = [pid for pid in children.get(todo.pop(), []) if pid not in _spared]
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
        if first and not children:
            raise Interrupted(signum)

    previous = {sig: signal.signal(sig, handle) for sig in _SIGNALS}
    _blocks.append(seen)
    try:
        yield seen
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        _blocks.pop()  # blocks nest: this one is the innermost
