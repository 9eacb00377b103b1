"""SIGTERM and SIGINT, handled one way everywhere trainpool owns something that bills.

Vertex Pipelines stops a cancelled run's task with SIGTERM; a user at a terminal
presses Ctrl-C. Either way the code following a job or a build must cancel what it
created rather than leave it running. The handler only raises (no RPC inside a
signal handler); the caller cancels in its ``except`` block, with further signals
held off by ``deferred`` so a second Ctrl-C cannot stop the cancel half-way.

Python delivers signals to the main thread only, so off the main thread both
context managers do nothing.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


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
