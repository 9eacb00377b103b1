"""Vertex's rules for changing a Schedule: what a create must hold, which states allow
pause, resume and update, and what an update mask may name.

Sources: ``google/cloud/aiplatform/v1/schedule.proto`` and ``schedule_service.proto``
(REST reference https://cloud.google.com/vertex-ai/docs/reference/rest/v1/
projects.locations.schedules). Quoted:

- ``max_concurrent_run_count``: "Required."; ``cron``: "Required. The time specification
  to launch scheduled runs." (the ``time_specification`` oneof).
- PauseSchedule: "Pauses a Schedule. Will mark Schedule.state to 'PAUSED'." COMPLETED:
  "Schedules in completed state cannot be paused or resumed."
- ResumeSchedule: "Only paused Schedule can be resumed."
- UpdateSchedule: "Updates an active or paused Schedule. When the Schedule is updated, new
  runs will be scheduled starting from the updated next execution time after the update
  time based on the time_specification in the updated Schedule. All unstarted runs before
  the update time will be skipped while already created runs will NOT be paused or
  canceled." ``update_mask`` restrictions: "The scheduled request type cannot be changed.
  The non-empty fields cannot be unset. The output_only fields will be ignored if
  specified."

Which status a refusal has is not published: FAILED_PRECONDITION for a state that does not
allow the change, INVALID_ARGUMENT for a bad field (the emulator's choices).
"""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1.types import schedule as sc

from trainpool.errors import InputError
from trainpool.spec.timing import split_cron

State = sc.Schedule.State

UPDATABLE = (
    "display_name",
    "cron",
    "start_time",
    "end_time",
    "allow_queueing",
    "max_run_count",
    "max_concurrent_run_count",
    "max_concurrent_active_run_count",
    "create_pipeline_job_request",
)
"""The fields an update mask may name: those the aiplatform SDK's
``PipelineJobSchedule.update()`` sends (pipeline_job_schedules.py), and the request
template (its type cannot change)."""
OUTPUT_ONLY = (
    "name",
    "state",
    "create_time",
    "update_time",
    "next_run_time",
    "last_pause_time",
    "last_resume_time",
    "started_run_count",
    "catch_up",
    "last_scheduled_run_response",
)


def check_cron(cron: str) -> None:
    """InputError unless ``cron`` is a Vertex schedule cron (``trainpool.spec.timing``)."""
    try:
        split_cron(cron)
    except ValueError as err:
        raise InputError.of("schedule.cron", f"{err}; optionally after TZ=ZONE") from err


def check_limits(schedule: Any) -> None:
    """InputError for a limit the proto refuses: ``max_concurrent_run_count`` is required
    (1 or more), the others are unset (0) or positive."""
    if schedule.max_concurrent_run_count < 1:
        raise InputError.of(
            "schedule.max_concurrent_run_count",
            f"{schedule.max_concurrent_run_count}; accepted: 1 or more",
        )
    for field in ("max_run_count", "max_concurrent_active_run_count"):
        if getattr(schedule, field) < 0:
            raise InputError.of(
                f"schedule.{field}", f"{getattr(schedule, field)}; accepted: unset, or 1 or more"
            )
    if _has(schedule, "end_time") and _has(schedule, "start_time"):
        if schedule.end_time < schedule.start_time:
            raise InputError.of(
                "schedule.end_time",
                f"{schedule.end_time.isoformat()} is before start_time "
                f"{schedule.start_time.isoformat()}; accepted: a later time",
            )


def _has(schedule: Any, field: str) -> bool:
    return bool(sc.Schedule.pb(schedule).HasField(field))


def pause_refusal(schedule: Any) -> str | None:
    """Why PauseSchedule is refused ("Pauses a Schedule. Will mark Schedule.state to
    'PAUSED'."; only an ACTIVE schedule can be paused), else None."""
    if schedule.state != State.ACTIVE:
        return (
            f"Cannot pause Schedule {schedule.name}: it is {schedule.state.name}; "
            "accepted: an ACTIVE schedule (a COMPLETED one cannot be paused or resumed)"
        )
    return None


def resume_refusal(schedule: Any) -> str | None:
    """Why ResumeSchedule is refused ("Only paused Schedule can be resumed."), else None."""
    if schedule.state != State.PAUSED:
        return (
            f"Cannot resume Schedule {schedule.name}: it is {schedule.state.name}; "
            "accepted: a PAUSED schedule (only a paused Schedule can be resumed)"
        )
    return None


def update_refusal(schedule: Any) -> str | None:
    """Why UpdateSchedule is refused ("Updates an active or paused Schedule."), else None."""
    if schedule.state not in (State.ACTIVE, State.PAUSED):
        return (
            f"Cannot update Schedule {schedule.name}: it is {schedule.state.name}; "
            "accepted: an ACTIVE or PAUSED schedule"
        )
    return None


def apply_update(stored: Any, requested: Any, paths: list[str]) -> list[str]:
    """Copy the masked fields of ``requested`` onto ``stored``; the paths applied (output-only
    ones are ignored). InputError for an unknown path, a set field unset, a changed request
    type, or a bad value."""
    applied = []
    for path in paths:
        if path in OUTPUT_ONLY:
            continue
        if path not in UPDATABLE:
            raise InputError.of(
                "update_mask",
                f"{path!r} cannot be updated; accepted: {', '.join(UPDATABLE)}",
            )
        if path == "create_pipeline_job_request" and not _has(requested, path):
            raise InputError.of(
                "schedule.create_pipeline_job_request",
                "unset; accepted: a CreatePipelineJobRequest (the scheduled request type "
                "cannot be changed)",
            )
        message = sc.Schedule.pb(requested)
        field = message.DESCRIPTOR.fields_by_name[path]
        empty = (
            not message.HasField(path)
            if field.message_type is not None
            else getattr(requested, path) in ("", 0, False)
        )
        if empty and path != "allow_queueing" and _nonempty(stored, path):
            raise InputError.of(
                f"schedule.{path}", "would be unset; accepted: a value (set fields cannot be unset)"
            )
        setattr(stored, path, getattr(requested, path))
        applied.append(path)
    check_cron(stored.cron)
    check_limits(stored)
    return applied


def _nonempty(schedule: Any, path: str) -> bool:
    message = sc.Schedule.pb(schedule)
    field = message.DESCRIPTOR.fields_by_name[path]
    if field.message_type is not None:
        return bool(message.HasField(path))
    return getattr(schedule, path) not in ("", 0, False)
