"""SIGTERM and SIGINT, handled one way everywhere trainpool owns something that bills.

Vertex Pipelines stops a cancelled run's task with SIGTERM; a user at a terminal
presses Ctrl-C. Either way the code following a job or a build must cancel what it
created rather than leave it running. The handler only raises (no RPC inside a
signal handler); the caller cancels in its ``except`` block, with further signals
held off by ``deferred`` so a second Ctrl-C cannot stop the cancel half-way.

Python delivers signals to the main thread only, so off the main thread both
context managers do nothing.

A main thread that waits for something while a signal may come (an event, a child process)
waits with :func:`wait_event` or :func:`wait_child`, never a bare ``Event.wait()`` or
``Popen.wait()``: the kernel hands a process's signal to any of its threads that does not
block it (gRPC's among them), and CPython then only flags it for the main thread, which runs
the handler when it next runs bytecode; blocked in a lock or ``waitpid`` with no timeout, it
never does (https://github.com/python/cpython/issues/85300, open), and the signal is lost.
"""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

_SIGNALS = (signal.SIGTERM, signal.SIGINT)
LOOK_S = 0.2
"""How long :func:`wait_event` and :func:`wait_child` block between looks at the signals that
came meanwhile: the most a handler waits when its signal landed on another thread."""


class Interrupted(Exception):
    """SIGTERM or SIGINT arrived inside ``raise_on_signal``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def raise_on_signal() -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT raise ``Interrupted``."""
    if not _main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise) for sig in _SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def deferred() -> Iterator[list[int]]:
    """Within the block, SIGTERM and SIGINT are recorded in the yielded list, not acted on."""
    seen: list[int] = []
    if not _main_thread():
        yield seen
        return
    previous = {sig: signal.signal(sig, lambda s, _f: seen.append(s)) for sig in _SIGNALS}
    try:
        yield seen
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def wait_event(event: threading.Event) -> None:
    """``event.wait()``, letting the main thread's signal handlers run as signals come."""
    while not event.wait(LOOK_S):
        pass


def wait_child(child: subprocess.Popen[Any]) -> int:
    """``child.wait()``, letting the main thread's signal handlers run as signals come; the
    child's return code."""
    while True:
        try:
            return child.wait(timeout=LOOK_S)
        except subprocess.TimeoutExpired:
            continue
