"""The messages of the emulator's own services (package ``trainpool.emulator.v1``), as
proto-plus messages: the wire contract its server (:mod:`trainpool.emulator.api`) and its
client (:mod:`trainpool.emulator_client`) both import."""

from __future__ import annotations

from datetime import datetime, timedelta

import proto  # type: ignore[import-untyped]
from google.protobuf import duration_pb2, timestamp_pb2

CLOCK = "trainpool.emulator.v1.Clock"
FAULTS = "trainpool.emulator.v1.Faults"

__protobuf__ = proto.module(
    package="trainpool.emulator.v1",
    manifest={
        "GetTimeRequest",
        "ClockTime",
        "AdvanceClockRequest",
        "AdvanceClockResponse",
        "PreemptJobRequest",
    },
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


class PreemptJobRequest(proto.Message):  # type: ignore[misc]
    """``name``: the CustomJob's resource name."""

    name: str = proto.Field(proto.STRING, number=1)
