"""``google.cloud.aiplatform.v1.ScheduleService``: Create, Get, List and Delete.

A schedule is stored whole, with the ``CreatePipelineJobRequest`` it embeds, so a test can
read back exactly what a client sent. The emulator keeps schedules; it does not fire them
(run the pipeline with ``trainpool run --local``).
"""

from __future__ import annotations

from typing import Any

import grpc
from google.cloud.aiplatform_v1.types import schedule as sc
from google.cloud.aiplatform_v1.types import schedule_service as ss
from google.longrunning import operations_pb2

from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import service
from trainpool.emulator.jobs.runner import Runner
from trainpool.emulator.records import operations
from trainpool.emulator.records.kinds import SCHEDULES
from trainpool.emulator.records.resources import now
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError, brief
from trainpool.spec.timing import split_cron

SERVICE = "google.cloud.aiplatform.v1.ScheduleService"


def check_cron(cron: str) -> None:
    """INVALID_ARGUMENT unless ``cron`` is a Vertex schedule cron (``trainpool.spec.timing``)."""
    try:
        split_cron(cron)
    except ValueError as err:
        raise InputError.of("schedule.cron", f"{err}; optionally after TZ=ZONE") from err


class ScheduleService:
    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.records = state.records

    def get(self, name: str) -> sc.Schedule:
        return requests.existing(self.records, SCHEDULES, name)

    def create(self, request: ss.CreateScheduleRequest) -> sc.Schedule:
        requests.check_parent(request.parent)
        schedule: Any = request.schedule
        requests.check_display_name(schedule.display_name, "schedule.display_name")
        check_cron(schedule.cron)
        if schedule.max_concurrent_run_count < 1:
            raise InputError.of(
                "schedule.max_concurrent_run_count",
                f"{schedule.max_concurrent_run_count}; accepted: 1 or more",
            )
        embedded = schedule.create_pipeline_job_request
        job = embedded.pipeline_job
        field = "schedule.create_pipeline_job_request.pipeline_job"
        requests.check_display_name(job.display_name, f"{field}.display_name", required=False)
        requests.check_labels(job.labels, f"{field}.labels")
        if job.runtime_config.gcs_output_directory:
            requests.check_gcs_uri(
                job.runtime_config.gcs_output_directory,
                f"{field}.runtime_config.gcs_output_directory",
            )
        if "root" not in dict(embedded.pipeline_job.pipeline_spec):
            raise InputError.of(
                "schedule.create_pipeline_job_request.pipeline_job.pipeline_spec",
                "missing; accepted: a compiled KFP pipeline",
            )
        if embedded.parent and embedded.parent != request.parent:
            raise InputError.of(
                "schedule.create_pipeline_job_request.parent",
                f"{brief(embedded.parent)}; accepted: the schedule's own parent {request.parent!r}",
            )
        stamp = now()
        schedule.name = f"{request.parent}/{SCHEDULES.collection}/{self.state.new_id('schedule')}"
        schedule.state = sc.Schedule.State.ACTIVE
        schedule.create_time = schedule.update_time = stamp
        if not schedule.start_time:
            schedule.start_time = stamp
        return self.records.insert(SCHEDULES, request.parent, schedule)

    def list(self, request: ss.ListSchedulesRequest) -> ss.ListSchedulesResponse:
        found, token = requests.list_page(self.records, SCHEDULES, request)
        return ss.ListSchedulesResponse(schedules=found, next_page_token=token)

    def delete(self, request: ss.DeleteScheduleRequest) -> operations_pb2.Operation:
        self.get(request.name)
        self.records.delete(SCHEDULES, request.name)
        return operations.done(f"{request.name}/operations/{self.state.new_id('operation')}")


def handler(state: EmulatorState, runner: Runner) -> grpc.GenericRpcHandler:
    """The ScheduleService handler."""
    schedules = ScheduleService(state)
    return service(
        SERVICE,
        {
            "CreateSchedule": (schedules.create, ss.CreateScheduleRequest, sc.Schedule),
            "GetSchedule": (lambda r: schedules.get(r.name), ss.GetScheduleRequest, sc.Schedule),
            "ListSchedules": (schedules.list, ss.ListSchedulesRequest, ss.ListSchedulesResponse),
            "DeleteSchedule": (
                schedules.delete,
                ss.DeleteScheduleRequest,
                operations_pb2.Operation,
            ),
        },
    )
