"""Vertex's rules for a Schedule: when its runs come due, and whether each starts, waits or
is skipped. Pure functions over the ``Schedule`` proto; the firer applies them.

Sources: ``google/cloud/aiplatform/v1/schedule.proto`` and ``schedule_service.proto``
(googleapis/googleapis; REST reference
https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.schedules,
same text). Quoted:

- ``cron``: "Cron schedule (https://en.wikipedia.org/wiki/Cron) to launch scheduled runs.
  To explicitly set a timezone to the cron tab, apply a prefix in the cron tab:
  "CRON_TZ=${IANA_TIME_ZONE}" or "TZ=${IANA_TIME_ZONE}"." Parsed by
  :func:`trainpool.spec.timing.split_cron` (croniter). Without a prefix the zone is UTC
  (not published: the emulator's choice).
- ``start_time``: "Timestamp after which the first run can be scheduled. Default to
  Schedule create time if not specified." A fire time equal to ``start_time`` counts.
- ``end_time``: "Timestamp after which no new runs can be scheduled. If specified, The
  schedule will be completed when either end_time is reached or when scheduled_run_count
  >= max_run_count. ... Already scheduled runs will be allowed to complete." A fire time
  equal to ``end_time`` still runs; runs queued before it still start.
- ``max_run_count``: "The schedule will be completed when either started_run_count >=
  max_run_count or when end_time is reached." COMPLETED comes when that run *starts*.
- ``max_concurrent_run_count``: "Required. Maximum number of runs that can be started
  concurrently for this Schedule. This is the limit for starting the scheduled requests
  and not the execution of the operations/jobs created by the requests (if applicable)."
  The emulator starts runs one at a time (one CreatePipelineJob call, then the next), so
  this limit (1 or more) never holds a run back; runs that are *executing* are limited by:
- ``max_concurrent_active_run_count``: "Specifies the maximum number of active runs that
  can be executed concurrently for this Schedule. This limits the number of runs that can
  be in a non-terminal state at the same time."
- ``allow_queueing``: "Whether new scheduled runs can be queued when max_concurrent_runs
  limit is reached. If set to true, new runs will be queued instead of skipped. Default to
  false." Queued runs wait in order (first due, first started) and keep their
  ``scheduled_run_time``; they are not PipelineJobs until they start (a queued
  PipelineJob would count as active). Not published: the order, and that the queue has
  no bound; the emulator's choices.
- ``state``: ACTIVE "Runs are being scheduled on the user-specified timespec."; PAUSED "No
  new runs will be created until the schedule is resumed. Already started runs will be
  allowed to complete."; COMPLETED "No new runs will be scheduled. ... Schedules in
  completed state cannot be paused or resumed."
- ``next_run_time``: "Timestamp when this Schedule should schedule the next run. Having a
  next_run_time in the past means the runs are being started behind schedule."
- ResumeSchedule: "When the Schedule is resumed, new runs will be scheduled starting from
  the next execution time after the current time based on the time_specification in the
  Schedule. If Schedule.catch_up is set up true, all missed runs will be scheduled for
  backfill first." ``catch_up``: "If set to true, all missed runs will be scheduled. New
  runs will be scheduled after the backfill is complete." The missed runs are the fire
  times from the ``next_run_time`` the pause left to the resume time; they are queued
  (never skipped for concurrency, since "all missed runs will be scheduled"), still
  bounded by ``max_run_count`` and ``end_time`` (not published: the emulator's reading).
- UpdateSchedule ("new runs will be scheduled starting from the updated next execution
  time after the update time"): :func:`run_after` the update time; what an update may
  change is in :mod:`trainpool.emulator.schedules.changes`.

Not published, and the emulator's choices: a skipped run does not count in
``started_run_count``; ``last_scheduled_run_response.run_response`` is the created
PipelineJob's name, or ``skipped: ...`` / ``queued: ...`` / ``failed: ...`` saying why.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from croniter import croniter
from google.cloud.aiplatform_v1.types import schedule as sc

from trainpool.spec.timing import split_cron

State = sc.Schedule.State
DEFAULT_ZONE = "UTC"
MAX_BACKFILL = 1000
"""At most this many missed runs are backfilled by one resume (a minutely cron paused for a
year would otherwise queue half a million runs); the rest are skipped, and the log says so."""


def _set(schedule: Any, field: str) -> bool:
    return bool(sc.Schedule.pb(schedule).HasField(field))


def _when(value: Any) -> datetime:
    """A proto timestamp (a ``DatetimeWithNanoseconds``) as a plain aware datetime."""
    return datetime.fromtimestamp(value.timestamp(), timezone.utc)


def ticks(cron: str, after: datetime, *, inclusive: bool = False) -> Iterator[datetime]:
    """The fire times of ``cron`` after ``after`` (at or after, with ``inclusive``), in UTC."""
    zone, fields = split_cron(cron)
    start = after.astimezone(ZoneInfo(zone or DEFAULT_ZONE))
    if inclusive:
        start -= timedelta(microseconds=1)
    times = croniter(fields, start)
    while True:
        yield times.get_next(datetime).astimezone(timezone.utc)


def within_end(schedule: Any, when: datetime) -> bool:
    """True unless ``when`` is after the schedule's ``end_time``."""
    return not _set(schedule, "end_time") or when <= _when(schedule.end_time)


def first_run_time(schedule: Any, after: datetime) -> datetime | None:
    """The first fire time at or after ``start_time`` and at or after ``after``; None when it
    would be after ``end_time``."""
    start = _when(schedule.start_time) if _set(schedule, "start_time") else after
    first = next(ticks(schedule.cron, max(start, after), inclusive=True))
    return first if within_end(schedule, first) else None


def run_after(schedule: Any, when: datetime) -> datetime | None:
    """The fire time after ``when`` (not before ``start_time``); None after ``end_time``."""
    start = _when(schedule.start_time) if _set(schedule, "start_time") else when
    if start > when:
        return first_run_time(schedule, start)
    following = next(ticks(schedule.cron, when))
    return following if within_end(schedule, following) else None


def next_run(schedule: Any) -> datetime | None:
    """The schedule's ``next_run_time``, or None when it has none."""
    return _when(schedule.next_run_time) if _set(schedule, "next_run_time") else None


def set_next_run(schedule: Any, when: datetime | None) -> None:
    """Set ``next_run_time`` to ``when`` (unset for None: no run is left)."""
    if when is None:
        del schedule.next_run_time
    else:
        schedule.next_run_time = when


def missed_runs(schedule: Any, resume_time: datetime) -> tuple[list[datetime], int]:
    """The fire times a pause missed (from ``next_run_time`` to before ``resume_time``,
    within ``end_time``): at most :data:`MAX_BACKFILL` of them, and how many were left out."""
    first = next_run(schedule)
    missed: list[datetime] = []
    left_out = 0
    if first is None:
        return missed, left_out
    when: datetime | None = first
    while when is not None and when < resume_time and within_end(schedule, when):
        if len(missed) < MAX_BACKFILL:
            missed.append(when)
        else:
            left_out += 1
            if left_out > 100_000:
                break
        when = next(ticks(schedule.cron, when))
    return missed, left_out


def run_limit_reason(schedule: Any) -> str | None:
    """Why no further run may start (``max_run_count`` reached), else None."""
    if schedule.max_run_count and schedule.started_run_count >= schedule.max_run_count:
        return (
            f"max_run_count {schedule.max_run_count} reached "
            f"(started_run_count {schedule.started_run_count})"
        )
    return None


def busy_reason(schedule: Any, active: int) -> str | None:
    """Why a due run cannot start now (its concurrency limit is reached), else None.

    ``active``: the schedule's PipelineJobs in a non-terminal state. In-flight starts are
    always 0 here (runs are started one at a time), below ``max_concurrent_run_count``.
    """
    limit = schedule.max_concurrent_active_run_count
    if limit and active >= limit:
        return f"max_concurrent_active_run_count {limit} reached ({active} run(s) active)"
    return None


def completion_reason(schedule: Any, now: datetime) -> str | None:
    """Why an ACTIVE schedule is COMPLETED at ``now``, else None."""
    reason = run_limit_reason(schedule)
    if reason:
        return reason
    if _set(schedule, "end_time") and now >= _when(schedule.end_time):
        return f"end_time {_when(schedule.end_time).isoformat()} reached"
    if next_run(schedule) is None:
        return "no fire time of its cron is left before end_time"
    return None


def job_id_for(schedule: Any, run_time: datetime) -> str:
    """A scheduled run's PipelineJob id: its pipeline's name and its fire time, as the SDK
    names runs (``<pipeline>-<YYYYMMDDHHMMSS>``), then the schedule's id, led by ``run-`` when
    the pipeline's name starts with a digit (a PipelineJob id starts with a letter,
    :data:`trainpool.emulator.pipeline_jobs.jobs.JOB_ID`). How Vertex names them is not
    published."""
    template = schedule.create_pipeline_job_request.pipeline_job
    name = str(dict(template.pipeline_spec).get("pipelineInfo", {}).get("name", "")) or "run"
    slug = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:80] or "run"
    if not slug[0].isalpha():
        slug = f"run-{slug}"
    return f"{slug}-{run_time:%Y%m%d%H%M%S}-{schedule.name.rsplit('/', 1)[-1]}"


def run_request(schedule: Any, run_time: datetime) -> Any:
    """The CreatePipelineJobRequest of the run due at ``run_time``: the schedule's template
    ("The API request template to launch the scheduled runs"), its parent defaulting to the
    schedule's, the job named by :func:`job_id_for`, and displayed as the template says,
    else as the schedule (how Vertex names them is not published)."""
    template = schedule.create_pipeline_job_request
    job = type(template.pipeline_job)
    request = type(template)(
        parent=template.parent or schedule.name.rsplit("/", 2)[0],
        pipeline_job=job.deserialize(job.serialize(template.pipeline_job)),
        pipeline_job_id=job_id_for(schedule, run_time),
    )
    if not request.pipeline_job.display_name:
        request.pipeline_job.display_name = schedule.display_name
    return request
