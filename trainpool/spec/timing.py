"""Durations and cron schedules as the Vertex API reads them, checked by the libraries of each.

- A duration is a protobuf ``Duration`` in its JSON form (``"3600s"``, ``"1.5s"``),
  parsed by protobuf itself.
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

_TZ_PREFIX = re.compile(r"^(?:CRON_TZ|TZ)=(\S*)\s*(.*)$")
CRON_ACCEPTED = "five fields 'MIN HOUR DAY MONTH WEEKDAY' such as '0 3 * * *'"


def duration_seconds(text: str) -> float:
    """Seconds of a JSON ``Duration`` such as ``"3600s"``; ValueError for anything else."""
    duration = Duration()
    try:
        duration.FromJsonString(text)
    except ValueError as err:
        raise ValueError(f"{text!r} is not a duration such as '3600s' or '1.5s'") from err
    return duration.ToTimedelta().total_seconds()


def check_zone(zone: str) -> None:
    """ValueError unless ``zone`` is an IANA time zone."""
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise ValueError(
            f"time zone {zone!r} is unknown; accepted: an IANA time zone such as "
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
        raise ValueError(f"{cron!r} is not a cron expression; accepted: {CRON_ACCEPTED}")
    return zone, " ".join(fields)
