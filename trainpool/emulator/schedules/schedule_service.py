"""``google.cloud.aiplatform.v1.ScheduleService``: Create, Get, List, Pause, Resume, Update,
Delete.

A schedule is stored whole, with the ``CreatePipelineJobRequest`` it embeds, and fired by
the emulator's firer (:mod:`trainpool.emulator.schedules.firer`) on the emulator's clock:
each run is a PipelineJob with ``schedule_name`` set. The rules (when runs come due, what
an update may change, which state allows pause and resume) are Vertex's, written once in
:mod:`trainpool.emulator.schedules.rules` and :mod:`~trainpool.emulator.schedules.changes`
with their sources
(https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.schedules).
Every change holds the firer's lock, so a pass never sees half of one.
"""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1.types import schedule as sc
from google.cloud.aiplatform_v1.types import schedule_service as ss
from google.longrunning import operations_pb2
from google.protobuf import empty_pb2

from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import Service, precondition, service
from trainpool.emulator.records.kinds import SCHEDULES
from trainpool.emulator.schedules import changes, rules
from trainpool.emulator.schedules.firer import Firer
from trainpool.emulator.schedules.ledger import stamp
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError, brief

SERVICE = "google.cloud.aiplatform.v1.ScheduleService"
State = sc.Schedule.State


def check_template(schedule: Any, parent: str) -> None:
    """INVALID_ARGUMENT unless the schedule embeds a CreatePipelineJobRequest the emulator
    can run ("User-specified ID is not supported in the request template.")."""
    embedded = schedule.create_pipeline_job_request
    field = "schedule.create_pipeline_job_request"
    job = embedded.pipeline_job
    requests.check_display_name(
        job.display_name, f"{field}.pipeline_job.display_name", required=False
    )
    requests.check_labels(job.labels, f"{field}.pipeline_job.labels")
    if job.runtime_config.gcs_output_directory:
        requests.check_gcs_uri(
            job.runtime_config.gcs_output_directory,
            f"{field}.pipeline_job.runtime_config.gcs_output_directory",
        )
    if "root" not in dict(embedded.pipeline_job.pipeline_spec):
        raise InputError.of(
            f"{field}.pipeline_job.pipeline_spec", "missing; accepted: a compiled KFP pipeline"
        )
    if embedded.parent and embedded.parent != parent:
        raise InputError.of(
            f"{field}.parent",
            f"{brief(embedded.parent)}; accepted: the schedule's own parent {parent!r}",
        )
    if embedded.pipeline_job_id:
        raise InputError.of(
            f"{field}.pipeline_job_id",
            f"{brief(embedded.pipeline_job_id)}; accepted: unset (a user-specified ID is not "
            "supported in the request template)",
        )


class ScheduleService:
    def __init__(self, state: EmulatorState, firer: Firer) -> None:
        self.state = state
        self.records = state.records
        self.firer = firer

    def get(self, name: str) -> sc.Schedule:
        return requests.existing(self.records, SCHEDULES, name)

    def create(self, request: ss.CreateScheduleRequest) -> sc.Schedule:
        requests.check_parent(request.parent)
        schedule: Any = request.schedule
        requests.check_display_name(schedule.display_name, "schedule.display_name")
        if not schedule.cron:
            raise InputError.of("schedule.cron", "missing; accepted: a cron such as '0 3 * * *'")
        changes.check_cron(schedule.cron)
        changes.check_limits(schedule)
        check_template(schedule, request.parent)
        for field in changes.OUTPUT_ONLY[1:]:  # the output-only fields a client sent: ignored
            sc.Schedule.pb(schedule).ClearField(field)
        with self.firer.lock:
            stamped = self.state.clock.now()
            schedule.name = (
                f"{request.parent}/{SCHEDULES.collection}/{self.state.new_id('schedule')}"
            )
            schedule.state = State.ACTIVE
            schedule.create_time = schedule.update_time = stamped
            if not schedule.start_time:
                schedule.start_time = stamped
            rules.set_next_run(schedule, rules.first_run_time(schedule, stamped))
            created = self.records.insert(SCHEDULES, request.parent, schedule)
            when = rules.next_run(schedule)
            self.firer.note(
                schedule.name, f"CREATED ({schedule.cron}); next run {stamp(when) if when else '-'}"
            )
        self.firer.wake()
        return created

    def list(self, request: ss.ListSchedulesRequest) -> ss.ListSchedulesResponse:
        found, token = requests.list_page(self.records, SCHEDULES, request)
        return ss.ListSchedulesResponse(schedules=found, next_page_token=token)

    def pause(self, request: ss.PauseScheduleRequest) -> empty_pb2.Empty:
        with self.firer.lock:
            found = self.get(request.name)
            if refusal := changes.pause_refusal(found):
                raise precondition(refusal)
            paused = self.state.clock.now()

            def change(schedule: Any) -> None:
                schedule.state = State.PAUSED
                schedule.last_pause_time = paused

            self.records.update(SCHEDULES, found.name, change)
            self.firer.note(found.name, "PAUSED")
        return empty_pb2.Empty()

    def resume(self, request: ss.ResumeScheduleRequest) -> empty_pb2.Empty:
        with self.firer.lock:
            found = self.get(request.name)
            if refusal := changes.resume_refusal(found):
                raise precondition(refusal)
            resumed = self.state.clock.now()
            missed, left_out = rules.missed_runs(found, resumed)
            if request.catch_up:
                for when in missed:
                    self.firer.ledger.push(found.name, when, backfill=True)
                done = f"{len(missed)} missed run(s) queued for backfill"
                if left_out:
                    done += f", {left_out} more skipped (at most {rules.MAX_BACKFILL})"
            else:
                done = f"{len(missed) + left_out} missed run(s) skipped"

            def change(schedule: Any) -> None:
                schedule.state = State.ACTIVE
                schedule.last_resume_time = resumed
                schedule.catch_up = request.catch_up
                rules.set_next_run(schedule, rules.run_after(schedule, resumed))

            self.records.update(SCHEDULES, found.name, change)
            self.firer.note(found.name, f"RESUMED (catch_up={request.catch_up}): {done}")
        self.firer.wake()
        return empty_pb2.Empty()

    def update(self, request: ss.UpdateScheduleRequest) -> sc.Schedule:
        paths = list(request.update_mask.paths)
        if not paths:
            raise InputError.of(
                "update_mask", f"empty; accepted: some of {', '.join(changes.UPDATABLE)}"
            )
        with self.firer.lock:
            found = self.get(request.schedule.name)
            if refusal := changes.update_refusal(found):
                raise precondition(refusal)
            applied = changes.apply_update(found, request.schedule, paths)
            if "create_pipeline_job_request" in applied:
                check_template(found, found.name.rsplit("/", 2)[0])
            updated = self.state.clock.now()
            rules.set_next_run(found, rules.run_after(found, updated))
            dropped = self.firer.ledger.clear(found.name)
            self.records.update(
                SCHEDULES,
                found.name,
                lambda stored: sc.Schedule.pb(stored).CopyFrom(sc.Schedule.pb(found)),
            )
            when = rules.next_run(found)
            self.firer.note(
                found.name,
                f"UPDATED ({', '.join(applied) or 'nothing'}); next run "
                f"{stamp(when) if when else '-'}; {dropped} queued run(s) skipped",
            )
        self.firer.wake()
        return self.get(found.name)

    def delete(self, request: ss.DeleteScheduleRequest) -> operations_pb2.Operation:
        with self.firer.lock:
            self.get(request.name)
            self.records.delete(SCHEDULES, request.name)
            dropped = self.firer.ledger.clear(request.name)
            self.firer.note(request.name, f"DELETED; {dropped} queued run(s) dropped")
        return self.state.finished(request.name)


def handler(state: EmulatorState, firer: Firer) -> Service:
    """The ScheduleService handler, over the emulator's schedule ``firer``."""
    schedules = ScheduleService(state, firer)
    return service(
        SERVICE,
        {
            "CreateSchedule": (schedules.create, ss.CreateScheduleRequest, sc.Schedule),
            "GetSchedule": (lambda r: schedules.get(r.name), ss.GetScheduleRequest, sc.Schedule),
            "ListSchedules": (schedules.list, ss.ListSchedulesRequest, ss.ListSchedulesResponse),
            "PauseSchedule": (schedules.pause, ss.PauseScheduleRequest, empty_pb2.Empty),
            "ResumeSchedule": (schedules.resume, ss.ResumeScheduleRequest, empty_pb2.Empty),
            "UpdateSchedule": (schedules.update, ss.UpdateScheduleRequest, sc.Schedule),
            "DeleteSchedule": (
                schedules.delete,
                ss.DeleteScheduleRequest,
                operations_pb2.Operation,
            ),
        },
    )
