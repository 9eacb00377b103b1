"""SIGTERM and SIGINT turned into an exception while a job is being followed.

Vertex Pipelines stops a cancelled run's task with SIGTERM; a user at a
terminal presses Ctrl-C. Either way the launcher must cancel the job it owns
rather than leave it running and billing.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Interrupted(Exception):
    """The launcher got SIGTERM or SIGINT."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(signum)


@contextmanager
def raise_on_signal() -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT raise ``Interrupted`` (main thread only)."""
    previous = {sig: signal.signal(sig, _raise) for sig in _SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def deferred() -> Iterator[list[int]]:
    """Within the block, SIGTERM and SIGINT are recorded, not acted on (while cancelling)."""
    seen: list[int] = []
    previous = {sig: signal.signal(sig, lambda s, _f: seen.append(s)) for sig in _SIGNALS}
    try:
        yield seen
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
