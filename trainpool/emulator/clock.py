"""The emulator's time: real time plus an offset that only grows, so a week can pass in seconds.

Every time-driven rule of the emulator reads this clock, never ``datetime.now`` or
``time.monotonic`` directly: the timestamps it writes on resources (create, start, end,
update times), a job's ``scheduling.timeout`` (:mod:`trainpool.emulator.jobs.replicas`),
and when a Schedule's runs come due (:mod:`trainpool.emulator.schedules`). By default
the offset is 0 and the clock is real time. :meth:`Clock.advance` and
:meth:`Clock.advance_to` move it forward (never back: Vertex's time does not run
backwards, and every stored timestamp stays in the past); real time keeps passing on top.

The offset is part of the store (``state.py`` saves it in the database), so an emulator
restarted on the same root keeps the time its resources were stamped with.

What the clock does not move: processes (a replica's ``sleep`` still takes real time),
the lines of ``job.log`` (real time, for reading next to the replicas' own logs), and test
faults (:class:`trainpool.emulator.faults.config.KillFault` counts real seconds).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from trainpool.errors import InputError


class Clock:
    """Real time plus ``offset_s`` seconds; ``on_change(offset_s)`` is told of every move."""

    def __init__(
        self, offset_s: float = 0.0, on_change: Callable[[float], None] | None = None
    ) -> None:
        if offset_s < 0:
            raise ValueError(f"offset_s: {offset_s!r}; accepted: 0 or more")
        self._offset_s = float(offset_s)
        self._on_change = on_change
        self._listeners: list[Callable[[datetime], None]] = []
        self._lock = threading.Lock()

    @property
    def offset_s(self) -> float:
        """Seconds this clock is ahead of real time."""
        return self._offset_s

    def now(self) -> datetime:
        """The emulator's current time, timezone-aware UTC."""
        return datetime.now(timezone.utc) + timedelta(seconds=self._offset_s)

    def monotonic(self) -> float:
        """``time.monotonic()`` plus the offset: durations measured with it include every
        advance (a job's timeout passes when the clock is moved past it)."""
        return time.monotonic() + self._offset_s

    def real_timestamp(self, when: datetime) -> float:
        """The real POSIX time at which this clock read (or will read) ``when``, at the
        current offset (to compare with times a process stamped, such as a metric file's)."""
        return when.timestamp() - self._offset_s

    def advance(self, by: timedelta) -> datetime:
        """Move the clock forward by ``by``; the new time. InputError for a negative ``by``."""
        if by < timedelta(0):
            raise InputError.of(
                "by", f"{by}; accepted: a duration of 0 or more (the clock never goes back)"
            )
        with self._lock:
            self._offset_s += by.total_seconds()
            offset = self._offset_s
            if self._on_change is not None:
                self._on_change(offset)
        moved = self.now()
        for listener in list(self._listeners):
            listener(moved)
        return moved

    def advance_to(self, when: datetime) -> datetime:
        """Move the clock forward to ``when`` (timezone-aware); the new time. InputError for a
        naive time or one in the clock's past."""
        if when.tzinfo is None:
            raise InputError.of("to", f"{when.isoformat()}; accepted: a time with its zone (…Z)")
        current = self.now()
        if when < current:
            raise InputError.of(
                "to",
                f"{when.isoformat()} is before the emulator's time "
                f"{current.isoformat()}; accepted: a later time (the clock never goes back)",
            )
        return self.advance(when - current)

    def reach(self, when: datetime) -> datetime:
        """Move the clock forward to ``when`` if it is not there yet (real time may just
        have passed it); the clock's time."""
        with self._lock:
            ahead = when - self.now()
        return self.advance(ahead) if ahead > timedelta(0) else self.now()

    def on_advance(self, listener: Callable[[datetime], None]) -> None:
        """Call ``listener(new time)`` after every advance (in the advancing thread)."""
        self._listeners.append(listener)


def parse_duration(text: str) -> timedelta:
    """``1d``, ``12h``, ``30m``, ``90s``, ``1w``, combinations such as ``1d12h``, or a protobuf
    Duration (``3600s``, ``1.5s``); ValueError naming what is accepted."""
    units = {"w": 604800.0, "d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
    parts = re.findall(r"(\d+(?:\.\d+)?)([wdhms])", text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise ValueError(
            f"{text!r} is not a duration; accepted: a number and a unit (w, d, h, m, s), "
            "several at once such as 1d12h, e.g. 1d, 90m, 3600s"
        )
    return timedelta(seconds=sum(float(n) * units[u] for n, u in parts))


def parse_time(text: str) -> datetime:
    """An RFC 3339 time (``2026-12-01T03:00:00Z``, ``2026-12-01T04:00:00+01:00``) as UTC;
    ValueError naming what is accepted."""
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as err:
        raise ValueError(
            f"{text!r} is not a time; accepted: RFC 3339 such as 2026-12-01T03:00:00Z"
        ) from err
    if parsed.tzinfo is None:
        raise ValueError(
            f"{text!r} has no time zone; accepted: RFC 3339 with Z or an offset, such as "
            "2026-12-01T03:00:00Z"
        )
    return parsed.astimezone(timezone.utc)
