"""Faults a test asks for: answer UNAVAILABLE on a share of calls, delay answers, kill a replica.

Not Vertex's behaviour (that is :mod:`trainpool.emulator.jobs.failure_rules`): faults a
test or a demo asks for. ``Faults`` is given to :func:`trainpool.emulator.start` (or set
by the ``trainpool emulator`` flags); :mod:`trainpool.emulator.faults.interceptor` applies
the first two to calls, the job engine the kill. The UNAVAILABLE choice is seeded, so a
test sees the same sequence of failures every run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KillFault:
    """SIGKILL replica ``replica`` (``workerpool1-0``) ``after_s`` after it starts, ``times``
    times per job (each restart of it counts its own ``after_s``); the job engine applies it
    (a non-permanent exit, 137: the replica is restarted)."""

    replica: str
    after_s: float
    times: int = 1


@dataclass(frozen=True)
class Faults:
    """``unavailable_rate``: share of calls (0..1) answered UNAVAILABLE; ``delay_s``: added
    to every answer (each call waits on its own; the request is carried out after the
    delay); ``kill``: SIGKILL one replica some seconds after it starts; ``methods``: limit
    the first two to these method names (e.g. ``("GetCustomJob",)``)."""

    unavailable_rate: float = 0.0
    delay_s: float = 0.0
    seed: int = 0
    kill: KillFault | None = None
    methods: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 0.0 <= self.unavailable_rate <= 1.0:
            raise ValueError(
                f"unavailable_rate: {self.unavailable_rate!r}; accepted: a share from 0.0 to 1.0"
            )
        if self.delay_s < 0:
            raise ValueError(f"delay_s: {self.delay_s!r}; accepted: seconds >= 0")

    @property
    def active(self) -> bool:
        return self.unavailable_rate > 0 or self.delay_s > 0
