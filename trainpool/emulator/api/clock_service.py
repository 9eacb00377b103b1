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

The messages are proto-plus messages of package ``trainpool.emulator.v1``;
:func:`get_time` and :func:`advance_clock` are the client.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import grpc
import proto  # type: ignore[import-untyped]
from google.protobuf import duration_pb2, timestamp_pb2

from trainpool.emulator.api.rpc import Service, service
from trainpool.emulator.jobs.runner import Runner
from trainpool.emulator.schedules.firer import firer_of
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError

SERVICE = "trainpool.emulator.v1.Clock"
DEFAULT_WAIT_S = 600.0

__protobuf__ = proto.module(
    package="trainpool.emulator.v1",
    manifest={"GetTimeRequest", "ClockTime", "AdvanceClockRequest", "AdvanceClockResponse"},
)


class GetTimeRequest(proto.Message):  # type: ignore[misc]
    """No fields."""


class ClockTime(proto.Message):  # type: ignore[misc]
    """``now``: the emulator's time; ``offset``: how far ahead of real time it is."""

    now: datetime = proto.Field(proto.MESSAGE, number=1, message=timestamp_pb2.Timestamp)
    offset: timedelta = proto.Field(proto.MESSAGE, number=2, message=duration_pb2.Duration)


class AdvanceClockRequest(proto.Message):  # type: ignore[misc]
    """``by`` a duration or ``to`` a time (one of them); ``wait_for_runs``: at each fire
    time, wait until the schedules' runs have ended (at most ``wait_timeout`` in all)."""

    by: timedelta = proto.Field(
        proto.MESSAGE, number=1, message=duration_pb2.Duration, oneof="target"
    )
    to: datetime = proto.Field(
        proto.MESSAGE, number=2, message=timestamp_pb2.Timestamp, oneof="target"
    )
    wait_for_runs: bool = proto.Field(proto.BOOL, number=3)
    wait_timeout: timedelta = proto.Field(proto.MESSAGE, number=4, message=duration_pb2.Duration)


class AdvanceClockResponse(proto.Message):  # type: ignore[misc]
    """The new time and offset; what the schedules did on the way; the PipelineJobs they
    started; ``idle``: False when ``wait_for_runs`` gave up with runs still going."""

    now: datetime = proto.Field(proto.MESSAGE, number=1, message=timestamp_pb2.Timestamp)
    offset: timedelta = proto.Field(proto.MESSAGE, number=2, message=duration_pb2.Duration)
    events: list[str] = proto.RepeatedField(proto.STRING, number=3)
    started: list[str] = proto.RepeatedField(proto.STRING, number=4)
    idle: bool = proto.Field(proto.BOOL, number=5)


def time_of(state: EmulatorState) -> ClockTime:
    return ClockTime(now=state.clock.now(), offset=timedelta(seconds=state.clock.offset_s))


def advance(
    state: EmulatorState, runner: Runner, request: AdvanceClockRequest
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
    firer = firer_of(state, runner)
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


def handler(state: EmulatorState, runner: Runner) -> Service:
    return service(
        SERVICE,
        {
            "GetTime": (lambda _: time_of(state), GetTimeRequest, ClockTime),
            "AdvanceClock": (
                lambda r: advance(state, runner, r),
                AdvanceClockRequest,
                AdvanceClockResponse,
            ),
        },
    )


def get_time(address: str, timeout_s: float = 30.0) -> ClockTime:
    """The time of the emulator at ``address`` (``unix:/PATH`` or ``127.0.0.1:PORT``)."""
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(
            f"/{SERVICE}/GetTime",
            request_serializer=GetTimeRequest.serialize,
            response_deserializer=ClockTime.deserialize,
        )
        found: ClockTime = call(GetTimeRequest(), timeout=timeout_s)
        return found


def advance_clock(
    address: str,
    *,
    by: timedelta | None = None,
    to: datetime | None = None,
    wait_for_runs: bool = False,
    wait_timeout_s: float = DEFAULT_WAIT_S,
) -> AdvanceClockResponse:
    """Advance the clock of the emulator at ``address`` ``by`` a duration or ``to`` a time
    (see the module's docstring). Errors are ``grpc.RpcError`` with the server's status."""
    if (by is None) == (to is None):
        raise ValueError("advance_clock: give one of by (a timedelta) and to (a datetime)")
    request = AdvanceClockRequest(wait_for_runs=wait_for_runs)
    if by is not None:
        request.by = by
    if to is not None:
        request.to = to
    if wait_for_runs:
        request.wait_timeout = timedelta(seconds=wait_timeout_s)
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(
            f"/{SERVICE}/AdvanceClock",
            request_serializer=AdvanceClockRequest.serialize,
            response_deserializer=AdvanceClockResponse.deserialize,
        )
        done: AdvanceClockResponse = call(request, timeout=wait_timeout_s + 60.0)
        return done
