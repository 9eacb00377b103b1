"""Checks every request gets before its method sees it: protobuf's own value ranges.

A gRPC request is deserialized without checking the ranges protobuf documents for its
well-known types, and proto-plus converts them only when a field is read, so an
out-of-range value would surface as a ``ValueError`` or ``OverflowError`` deep inside a
method. Every ``google.protobuf.Duration`` and ``Timestamp`` anywhere in the request is
checked here first and refused with INVALID_ARGUMENT naming its field:

- Duration: "Signed seconds of the span of time. Must be from -315,576,000,000 to
  +315,576,000,000 inclusive"; nanos from -999,999,999 to +999,999,999 with the sign of
  the seconds (``google/protobuf/duration.proto``);
- Timestamp: "Must be from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z inclusive", nanos
  from 0 to 999,999,999 (``google/protobuf/timestamp.proto``).
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from trainpool.errors import InputError, Problem

MAX_DURATION_S = 315_576_000_000
MIN_TIMESTAMP_S = -62_135_596_800
MAX_TIMESTAMP_S = 253_402_300_799
MAX_NANOS = 999_999_999
SHOWN = 5


def _duration(message: Any) -> str | None:
    seconds, nanos = message.seconds, message.nanos
    if abs(seconds) > MAX_DURATION_S or abs(nanos) > MAX_NANOS or seconds * nanos < 0:
        return (
            f"a Duration of {seconds} s and {nanos} ns; accepted: at most "
            f"{MAX_DURATION_S:,} s either way, nanos of the same sign below 1 s"
        )
    return None


def _timestamp(message: Any) -> str | None:
    if not MIN_TIMESTAMP_S <= message.seconds <= MAX_TIMESTAMP_S or not (
        0 <= message.nanos <= MAX_NANOS
    ):
        return (
            f"a Timestamp of {message.seconds} s and {message.nanos} ns; accepted: "
            "0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z"
        )
    return None


_CHECKS = {"google.protobuf.Duration": _duration, "google.protobuf.Timestamp": _timestamp}


def _repeated(field: Any) -> bool:
    """Whether a field descriptor is repeated (``is_repeated`` on protobuf 5.28+, ``label``
    before it)."""
    repeated = getattr(field, "is_repeated", None)
    return bool(repeated) if repeated is not None else field.label == field.LABEL_REPEATED


def problems(message: Message, path: str = "") -> list[Problem]:
    """Every Duration or Timestamp in ``message`` (a raw protobuf message) out of range."""
    found: list[Problem] = []
    check = _CHECKS.get(message.DESCRIPTOR.full_name)
    if check is not None:
        said = check(message)
        return [Problem(path or "request", said)] if said else []
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        where = f"{path}.{field.name}" if path else field.name
        if field.message_type.GetOptions().map_entry:
            entry = field.message_type.fields_by_name["value"]
            if entry.message_type is not None:
                for key, item in value.items():
                    found += problems(item, f"{where}[{key!r}]")
        elif _repeated(field):
            for index, item in enumerate(value):
                found += problems(item, f"{where}[{index}]")
        else:
            found += problems(value, where)
        if len(found) > SHOWN:
            break
    return found


def check_request(request: Any) -> None:
    """InputError naming each out-of-range Duration or Timestamp of a proto-plus (or raw
    protobuf) request."""
    raw = request if isinstance(request, Message) else type(request).pb(request)
    found = problems(raw)
    if found:
        raise InputError(found[:SHOWN])
