"""``google.cloud.aiplatform.v1.JobService``: CustomJob and HyperparameterTuningJob.

Create, Get, List, Cancel and Delete for both kinds. Requests and responses are
the real aiplatform proto types; errors are real gRPC status codes.
"""

from __future__ import annotations

from typing import Any

import grpc
from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import hyperparameter_tuning_job as hptj
from google.cloud.aiplatform_v1.types import job_service as js
from google.cloud.aiplatform_v1.types.job_state import JobState
from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2

from trainpool.emulator import validation
from trainpool.emulator.convert import job_spec_rest, study_spec_rest
from trainpool.emulator.job_store import CUSTOM, TERMINAL, TUNING
from trainpool.emulator.list_filter import page_after, page_size, parse_filter
from trainpool.emulator.rpc import invalid, not_found, precondition, unary
from trainpool.emulator.runner import Runner, runner_for
from trainpool.emulator.state import EmulatorState
from trainpool.emulator.tuning import run_tuning_job

SERVICE = "google.cloud.aiplatform.v1.JobService"
LABELS = {CUSTOM: "CustomJob", TUNING: "HyperparameterTuningJob"}


class JobService:
    def __init__(self, state: EmulatorState, runner: Runner) -> None:
        self.store = runner.store
        self.runner = runner
        self.state = state

    def _get(self, name: str, kind: str) -> Any:
        validation.check_name(name, kind)
        job = self.store.get(name)
        if job is None:
            raise not_found(f"{LABELS[kind]} {name} not found.")
        return job

    def create_custom_job(self, request: js.CreateCustomJobRequest) -> cj.CustomJob:
        validation.check_parent(request.parent)
        job = request.custom_job
        if not job.display_name:
            raise invalid("custom_job.display_name: '' is empty; accepted: a non-empty name")
        validation.check_job_spec(job_spec_rest(job.job_spec))
        job = self.store.insert(CUSTOM, request.parent, job)
        self.runner.submit(job.name, self.runner.run_custom_job)
        return job

    def create_tuning_job(
        self, request: js.CreateHyperparameterTuningJobRequest
    ) -> hptj.HyperparameterTuningJob:
        validation.check_parent(request.parent)
        job = request.hyperparameter_tuning_job
        if not job.display_name:
            raise invalid(
                "hyperparameter_tuning_job.display_name: '' is empty; accepted: a non-empty name"
            )
        validation.check_job_spec(
            job_spec_rest(job.trial_job_spec), "hyperparameter_tuning_job.trial_job_spec"
        )
        validation.check_study(
            study_spec_rest(job.study_spec),
            job.max_trial_count,
            job.parallel_trial_count,
            job.max_failed_trial_count,
        )
        job = self.store.insert(TUNING, request.parent, job)
        self.runner.submit(
            job.name, lambda name, controls: run_tuning_job(self.runner, name, controls.cancel)
        )
        return job

    def list_jobs(self, kind: str, request: Any) -> tuple[list[Any], str]:
        validation.check_parent(request.parent)
        size = page_size(request)
        rows = self.store.list_jobs(
            kind,
            request.parent,
            page_after(request.page_token),
            limit=size + 1,
            conditions=parse_filter(request.filter),
        )
        token = str(rows[size - 1][0]) if len(rows) > size else ""
        return [job for _, job in rows[:size]], token

    def cancel(self, name: str, kind: str) -> empty_pb2.Empty:
        job = self._get(name, kind)
        if job.state in TERMINAL:
            raise precondition(
                f"Cannot cancel {LABELS[kind]} {name}: it is already in state {job.state.name}."
            )

        def mark(record: Any) -> None:
            if record.state not in TERMINAL:
                record.state = JobState.JOB_STATE_CANCELLING

        self.store.update(name, mark)
        self.runner.cancel(name)
        return empty_pb2.Empty()

    def delete(self, name: str, kind: str) -> operations_pb2.Operation:
        job = self._get(name, kind)
        if job.state not in TERMINAL:
            raise precondition(
                f"Cannot delete {LABELS[kind]} {name} in state {job.state.name}: "
                "cancel it and wait until it ends."
            )
        self.store.delete(name)
        response = any_pb2.Any()
        response.Pack(empty_pb2.Empty())
        return operations_pb2.Operation(
            name=f"{name}/operations/{self.state.new_id('operation')}", done=True, response=response
        )


def handler(state: EmulatorState) -> grpc.GenericRpcHandler:
    """The JobService handler; recovers jobs a dead server left running, stops jobs on stop."""
    service = JobService(state, runner_for(state))
    ser_custom = cj.CustomJob.serialize
    ser_tuning = hptj.HyperparameterTuningJob.serialize
    ser_empty = empty_pb2.Empty.SerializeToString
    ser_op = operations_pb2.Operation.SerializeToString

    def list_custom(request: js.ListCustomJobsRequest) -> js.ListCustomJobsResponse:
        jobs, token = service.list_jobs(CUSTOM, request)
        return js.ListCustomJobsResponse(custom_jobs=jobs, next_page_token=token)

    def list_tuning(
        request: js.ListHyperparameterTuningJobsRequest,
    ) -> js.ListHyperparameterTuningJobsResponse:
        jobs, token = service.list_jobs(TUNING, request)
        return js.ListHyperparameterTuningJobsResponse(
            hyperparameter_tuning_jobs=jobs, next_page_token=token
        )

    methods = {
        "CreateCustomJob": unary(service.create_custom_job, js.CreateCustomJobRequest, ser_custom),
        "GetCustomJob": unary(
            lambda r: service._get(r.name, CUSTOM), js.GetCustomJobRequest, ser_custom
        ),
        "ListCustomJobs": unary(
            list_custom, js.ListCustomJobsRequest, js.ListCustomJobsResponse.serialize
        ),
        "CancelCustomJob": unary(
            lambda r: service.cancel(r.name, CUSTOM), js.CancelCustomJobRequest, ser_empty
        ),
        "DeleteCustomJob": unary(
            lambda r: service.delete(r.name, CUSTOM), js.DeleteCustomJobRequest, ser_op
        ),
        "CreateHyperparameterTuningJob": unary(
            service.create_tuning_job, js.CreateHyperparameterTuningJobRequest, ser_tuning
        ),
        "GetHyperparameterTuningJob": unary(
            lambda r: service._get(r.name, TUNING), js.GetHyperparameterTuningJobRequest, ser_tuning
        ),
        "ListHyperparameterTuningJobs": unary(
            list_tuning,
            js.ListHyperparameterTuningJobsRequest,
            js.ListHyperparameterTuningJobsResponse.serialize,
        ),
        "CancelHyperparameterTuningJob": unary(
            lambda r: service.cancel(r.name, TUNING),
            js.CancelHyperparameterTuningJobRequest,
            ser_empty,
        ),
        "DeleteHyperparameterTuningJob": unary(
            lambda r: service.delete(r.name, TUNING),
            js.DeleteHyperparameterTuningJobRequest,
            ser_op,
        ),
    }
    return grpc.method_handlers_generic_handler(SERVICE, methods)
