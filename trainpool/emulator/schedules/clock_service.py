"""``trainpool.emulator.v1.Clock``: read and move the emulator's clock, beside Vertex's API.

Vertex has no such service; it is how tests, ``trainpool clock`` and other processes
rehearse a week of schedules in seconds (:mod:`trainpool.emulator.clock`):

- ``GetTime(GetTimeRequest{}) -> ClockTime{now, offset}``: the emulator's time, and how far
  ahead of real time it is.
- ``AdvanceClock(AdvanceClockRequest{by | to, wait_for_runs, wait_timeout}) ->
  AdvanceClockResponse{now, offset, events, started}``: move the clock forward by a
  duration or to a time, through every schedule fire time on the way, one at a time
  (:meth:`trainpool.emulator.schedules.firer.Firer.advance_to`); ``events`` are what the
  schedules did (``<schedule id> run of <time> started: <PipelineJob>``, ``... skipped:
  ...``, ``... queued: ...``), ``started`` the PipelineJobs created. With
  ``wait_for_runs``, the clock waits at each fire time until every schedule's runs have
  ended and none is queued (at most ``wait_timeout`` in all, default 600 s; ``idle`` is
  False when it gave up), so each night's run runs at its own night; without it, runs
  started at one fire time are still executing at the next (they overlap). A time in the
  clock's past, or both or neither of ``by`` and ``to``, is INVALID_ARGUMENT.

The messages are in :mod:`trainpool.emulator_client.messages`;
:func:`trainpool.emulator_client.get_time` and :func:`trainpool.emulator_client.advance_clock`
are the client.
"""

from __future__ import annotations

from datetime import timedelta

from trainpool.emulator.api.rpc import Service, service
from trainpool.emulator.schedules.firer import Firer
from trainpool.emulator.state import EmulatorState
from trainpool.emulator_client import DEFAULT_WAIT_S
from trainpool.emulator_client.messages import (
    CLOCK as SERVICE,
)
from trainpool.emulator_client.messages import (
    AdvanceClockRequest,
    AdvanceClockResponse,
    ClockTime,
    GetTimeRequest,
)
from trainpool.errors import InputError


def time_of(state: EmulatorState) -> ClockTime:
    return ClockTime(now=state.clock.now(), offset=timedelta(seconds=state.clock.offset_s))


def advance(
    state: EmulatorState, firer: Firer, request: AdvanceClockRequest
) -> AdvanceClockResponse:
    """Advance ``state``'s clock as ``request`` says (see the module's docstring)."""
    target = AdvanceClockRequest.pb(request).WhichOneof("target")
    if target is None:
        raise InputError.of("by", "missing; accepted: a duration (by) or a time (to)")
    if target == "by" and request.by < timedelta(0):
        raise InputError.of(
            "by", f"{request.by}; accepted: a duration of 0 or more (the clock never goes back)"
        )
    if target == "to" and request.to < state.clock.now():
        state.clock.advance_to(request.to)  # refused: InputError naming the field
    wait_s = None
    if request.wait_for_runs:
        wait_s = request.wait_timeout.total_seconds() or DEFAULT_WAIT_S
    if target == "by":
        fired = firer.advance_by(request.by, wait_s)
    else:
        fired = firer.advance_to(request.to, wait_s)
    return AdvanceClockResponse(
        now=state.clock.now(),
        offset=timedelta(seconds=state.clock.offset_s),
        events=fired.events,
        started=fired.started,
        idle=fired.idle,
    )


def handler(state: EmulatorState, firer: Firer) -> Service:
    """The clock's service; an advance fires the schedules that fall due through ``firer``."""
    return service(
        SERVICE,
        {
            "GetTime": (lambda _: time_of(state), GetTimeRequest, ClockTime),
            "AdvanceClock": (
                lambda r: advance(state, firer, r),
                AdvanceClockRequest,
                AdvanceClockResponse,
            ),
        },
    )
