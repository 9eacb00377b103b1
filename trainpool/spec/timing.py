"""Durations and cron schedules as the Vertex API reads them, checked by the libraries of each.

- A duration is a protobuf ``Duration`` in its JSON form (``"3600s"``, ``"1.5s"``): ASCII
  digits, at most 9 fractional digits, then ``s``, and at most ``MAX_DURATION_S`` =
  315,576,000,000 seconds either way ("Must be from -315,576,000,000 to +315,576,000,000
  inclusive", google/protobuf/duration.proto). Protobuf's own parser is laxer (it takes
  ``"３６００s"`` in fullwidth digits, ``" 5s"`` and ``"+5s"``, as Python's ``int`` does), so
  the form is checked here first.
- A schedule's ``cron`` is five unix-cron fields, optionally after ``TZ=ZONE`` or
  ``CRON_TZ=ZONE`` (Vertex ``Schedule.cron``: "To explicitly set a timezone to the cron
  tab, apply a prefix in the cron tab: CRON_TZ=${IANA_TIME_ZONE} or TZ=${IANA_TIME_ZONE}");
  the fields are checked by croniter, the zone by the IANA database (``zoneinfo``).
"""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from google.protobuf.duration_pb2 import Duration

from trainpool.errors import brief

_TZ_PREFIX = re.compile(r"^(?:CRON_TZ|TZ)=(\S*)\s*(.*)$")
_DURATION = re.compile(r"(-?)([0-9]{1,12})(?:\.([0-9]{1,9}))?s")
MAX_DURATION_S = 315_576_000_000
DURATION_ACCEPTED = (
    f'a duration in seconds such as "3600s" or "1.5s" (ASCII digits, at most {MAX_DURATION_S:,}s)'
)
CRON_ACCEPTED = "five fields 'MIN HOUR DAY MONTH WEEKDAY' such as '0 3 * * *'"


def duration_seconds(text: str) -> float:
    """Seconds of a JSON ``Duration`` such as ``"3600s"``; ValueError for anything else."""
    match = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if match is None or int(match.group(2)) > MAX_DURATION_S:
        shown = (
            repr(text[:40]) + ("..." if len(text) > 40 else "") if isinstance(text, str) else text
        )
        raise ValueError(f"{shown} is not accepted; accepted: {DURATION_ACCEPTED}")
    duration = Duration()
    duration.FromJsonString(text)
    return duration.seconds + duration.nanos / 1e9


def check_zone(zone: str) -> None:
    """ValueError unless ``zone`` is an IANA time zone."""
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise ValueError(
            f"time zone {brief(zone)} is unknown; accepted: an IANA time zone such as "
            "America/New_York or UTC"
        ) from err


def split_cron(cron: str) -> tuple[str, str]:
    """``(zone or "", five fields)`` of a Vertex schedule cron; ValueError naming the problem."""
    body, zone = cron.strip(), ""
    if match := _TZ_PREFIX.match(body):
        zone, body = match.group(1), match.group(2)
        check_zone(zone)
    fields = body.split()
    if len(fields) != 5 or not croniter.is_valid(" ".join(fields)):
        raise ValueError(f"{brief(cron)} is not a cron expression; accepted: {CRON_ACCEPTED}")
    return zone, " ".join(fields)
