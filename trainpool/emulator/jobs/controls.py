"""How a running job is ended from outside: cancel, preempt, or an early stop with its reason.

Each is set once, from any thread (a gRPC call, a sweep's stopping rule, a test's fault),
and tells whoever listens at once (:meth:`Flag.listen`), so the job engine acts on it
without polling.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field


class Flag(threading.Event):
    """An Event that calls its listeners when set (they must be quick)."""

    def __init__(self) -> None:
        super().__init__()
        self._listeners: list[Callable[[], None]] = []
        self._guard = threading.Lock()

    def listen(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` when set (at once when it is already)."""
        with self._guard:
            if not self.is_set():
                self._listeners.append(listener)
                return
        listener()

    def set(self) -> None:
        with self._guard:
            if self.is_set():
                return
            super().set()
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener()


class Stop:
    """The service stopping a job early, with its reason (a sweep's stopping rule); set once."""

    def __init__(self) -> None:
        self._flag = Flag()
        self.reason = ""

    def set(self, reason: str) -> None:
        with self._flag._guard:
            if self._flag.is_set():
                return
            self.reason = reason
        self._flag.set()

    def is_set(self) -> bool:
        return self._flag.is_set()

    def listen(self, listener: Callable[[], None]) -> None:
        self._flag.listen(listener)


@dataclass(frozen=True)
class Controls:
    """How a running job is ended from outside: ``cancel``, ``preempt`` (its VMs
    reclaimed, :mod:`trainpool.emulator.jobs.faults_service`), or ``stop`` (the service stops
    it early, :class:`Stop`)."""

    cancel: Flag = field(default_factory=Flag)
    preempt: Flag = field(default_factory=Flag)
    stop: Stop = field(default_factory=Stop)

    def listen(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` whenever one of them is set."""
        self.cancel.listen(listener)
        self.preempt.listen(listener)
        self.stop.listen(listener)
