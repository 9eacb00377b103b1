"""``google.cloud.aiplatform.v1.ScheduleService``: Create, Get, List and Delete.

A schedule is stored whole, with the ``CreatePipelineJobRequest`` it embeds, so
a test can read back exactly what a client sent. The emulator keeps schedules;
it does not fire them (run the pipeline with ``trainpool run --local``).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import grpc
from google.cloud.aiplatform_v1.types import schedule as sc
from google.cloud.aiplatform_v1.types import schedule_service as ss
from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2

from trainpool.emulator import validation
from trainpool.emulator.list_filter import page_after, paginate
from trainpool.emulator.rpc import invalid, not_found, unary
from trainpool.emulator.state import EmulatorState
from trainpool.spec.timing import split_cron

SERVICE = "google.cloud.aiplatform.v1.ScheduleService"
KIND = "schedules"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedules (
  name TEXT PRIMARY KEY,
  parent TEXT NOT NULL,
  seq INTEGER NOT NULL,
  proto BLOB NOT NULL
);
"""


def check_cron(cron: str) -> None:
    """INVALID_ARGUMENT unless ``cron`` is a Vertex schedule cron (``trainpool.spec.timing``)."""
    try:
        split_cron(cron)
    except ValueError as err:
        raise invalid(f"schedule.cron: {err}; optionally after TZ=ZONE") from err


class ScheduleService:
    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.db = state.db
        self.db.executescript(_SCHEMA)

    def get(self, name: str) -> sc.Schedule:
        validation.check_name(name, KIND)
        rows = self.db.execute("SELECT proto FROM schedules WHERE name = ?", (name,))
        if not rows:
            raise not_found(f"Schedule {name} not found.")
        return sc.Schedule.deserialize(rows[0]["proto"])

    def create(self, request: ss.CreateScheduleRequest) -> sc.Schedule:
        validation.check_parent(request.parent)
        schedule: Any = request.schedule
        if not schedule.display_name:
            raise invalid("schedule.display_name: '' is empty; accepted: a non-empty name")
        check_cron(schedule.cron)
        if schedule.max_concurrent_run_count < 1:
            raise invalid(
                f"schedule.max_concurrent_run_count: {schedule.max_concurrent_run_count}; "
                "accepted: 1 or more"
            )
        embedded = schedule.create_pipeline_job_request
        if "root" not in dict(embedded.pipeline_job.pipeline_spec):
            raise invalid(
                "schedule.create_pipeline_job_request.pipeline_job.pipeline_spec: missing; "
                "accepted: a compiled KFP pipeline"
            )
        if embedded.parent and embedded.parent != request.parent:
            raise invalid(
                f"schedule.create_pipeline_job_request.parent: {embedded.parent!r}; "
                f"accepted: the schedule's own parent {request.parent!r}"
            )
        seq = self.state.new_id("schedule")
        stamp = datetime.now(timezone.utc)
        schedule.name = f"{request.parent}/{KIND}/{seq}"
        schedule.state = sc.Schedule.State.ACTIVE
        schedule.create_time = schedule.update_time = stamp
        if not schedule.start_time:
            schedule.start_time = stamp
        self.db.execute(
            "INSERT INTO schedules (name, parent, seq, proto) VALUES (?, ?, ?, ?)",
            (schedule.name, request.parent, int(seq), sc.Schedule.serialize(schedule)),
        )
        return schedule

    def list(self, request: ss.ListSchedulesRequest) -> ss.ListSchedulesResponse:
        validation.check_parent(request.parent)
        rows = self.db.execute(
            "SELECT seq, proto FROM schedules WHERE parent = ? AND seq > ? ORDER BY seq",
            (request.parent, page_after(request.page_token)),
        )
        items, token = paginate(
            [(r["seq"], sc.Schedule.deserialize(r["proto"])) for r in rows], request
        )
        return ss.ListSchedulesResponse(schedules=items, next_page_token=token)

    def delete(self, request: ss.DeleteScheduleRequest) -> operations_pb2.Operation:
        self.get(request.name)
        self.db.execute("DELETE FROM schedules WHERE name = ?", (request.name,))
        response = any_pb2.Any()
        response.Pack(empty_pb2.Empty())
        operation = f"{request.name}/operations/{self.state.new_id('operation')}"
        return operations_pb2.Operation(name=operation, done=True, response=response)


def handler(state: EmulatorState) -> grpc.GenericRpcHandler:
    """The ScheduleService handler."""
    service = ScheduleService(state)
    ser = sc.Schedule.serialize
    methods = {
        "CreateSchedule": unary(service.create, ss.CreateScheduleRequest, ser),
        "GetSchedule": unary(lambda r: service.get(r.name), ss.GetScheduleRequest, ser),
        "ListSchedules": unary(
            service.list, ss.ListSchedulesRequest, ss.ListSchedulesResponse.serialize
        ),
        "DeleteSchedule": unary(
            service.delete, ss.DeleteScheduleRequest, operations_pb2.Operation.SerializeToString
        ),
    }
    return grpc.method_handlers_generic_handler(SERVICE, methods)
