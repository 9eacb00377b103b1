"""``google.cloud.aiplatform.v1.PipelineService``: PipelineJobs and TrainingPipelines.

PipelineJobs (Create, Get, List, Cancel, Delete, BatchCancel, BatchDelete) run locally,
each in a process of its own (:mod:`trainpool.emulator.pipeline_jobs.runs`), created by
:func:`trainpool.emulator.pipeline_jobs.jobs.create` (as a Schedule's runs are). List takes
Vertex's filters and ``order_by``, newest first by default
(:mod:`trainpool.emulator.records.paging`). Delete refuses an unfinished job, as the
emulator's JobService does; BatchDelete is atomic ("If it fails, none of the PipelineJobs
are deleted"), BatchCancel skips the jobs that have ended ("Firstly the server will check
if all the jobs are in non-terminal states, and skip the jobs that are already
terminated"), both at most :data:`MAX_BATCH` names (aiplatform v1
``pipeline_service.proto``); both answer a finished Operation.
TrainingPipelines (Create, Get, List, Cancel, Delete), what the SDK's
``Custom*TrainingJob`` classes create, run a backing CustomJob
(:mod:`trainpool.emulator.jobs.training_pipelines`).
"""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1.types import pipeline_job as pj
from google.cloud.aiplatform_v1.types import pipeline_service as ps
from google.cloud.aiplatform_v1.types import training_pipeline as tp
from google.longrunning import operations_pb2
from google.protobuf import empty_pb2, json_format

from trainpool.emulator import field_coverage
from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import (
    Service,
    already_exists,
    not_found,
    precondition,
    service,
    typed,
)
from trainpool.emulator.jobs import training_pipelines
from trainpool.emulator.jobs.manager import JobManager
from trainpool.emulator.model_registry import models
from trainpool.emulator.persistent.resources import Lives
from trainpool.emulator.pipeline_jobs import jobs
from trainpool.emulator.pipeline_jobs.runs import TERMINAL, PipelineJobRunner
from trainpool.emulator.records.kinds import MODELS, PIPELINE_JOBS, TRAINING_PIPELINES
from trainpool.emulator.records.resources import AlreadyExists
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError, brief

SERVICE = "google.cloud.aiplatform.v1.PipelineService"
MAX_BATCH = 32
"""BatchDelete/BatchCancelPipelineJobsRequest.names: "A maximum of 32 PipelineJobs"."""


class PipelineService:
    def __init__(
        self,
        state: EmulatorState,
        runs: PipelineJobRunner,
        trainings: training_pipelines.TrainingPipelines,
        lives: Lives,
    ) -> None:
        self.state = state
        self.records = state.records
        self.runs = runs
        self.trainings = trainings
        self.lives = lives
        """The persistent resources a TrainingPipeline's job may name."""

    # PipelineJobs
    def get_job(self, name: str) -> Any:
        job = requests.existing(self.records, PIPELINE_JOBS, name)
        return self.runs.read(job if job.state in TERMINAL else self.runs.fill_details(job))

    def create_job(self, request: ps.CreatePipelineJobRequest) -> Any:
        """The one create path (:func:`trainpool.emulator.pipeline_jobs.jobs.create`), which a
        Schedule's runs take too."""
        requests.check_parent(request.parent)
        job = request.pipeline_job
        requests.check_display_name(job.display_name, "pipeline_job.display_name", required=False)
        requests.check_labels(job.labels, "pipeline_job.labels")
        requests.check_gcs_uri(
            job.runtime_config.gcs_output_directory,
            "pipeline_job.runtime_config.gcs_output_directory",
        )
        values = json_format.MessageToDict(pj.PipelineJob.pb(job).runtime_config)
        requests.check_no_nul(
            values.get("parameterValues", {}), "pipeline_job.runtime_config.parameter_values"
        )
        requests.check_no_nul(
            values.get("parameters", {}), "pipeline_job.runtime_config.parameters"
        )
        try:
            created = jobs.create(self.state, self.runs, request)
        except AlreadyExists as err:
            raise already_exists(f"PipelineJob {err.args[0]} exists.") from None
        return self.get_job(created.name)

    def cancel_job(self, request: ps.CancelPipelineJobRequest) -> empty_pb2.Empty:
        job = self.get_job(request.name)
        if not self.runs.cancel(job.name):
            raise precondition(
                f"Cannot cancel PipelineJob {job.name}: it is already {job.state.name}."
            )
        return empty_pb2.Empty()

    def delete_job(self, request: ps.DeletePipelineJobRequest) -> Any:
        job = self.get_job(request.name)
        self._deletable(job, "name")
        self.runs.delete(job.name)
        return self.state.finished(job.name)

    def _deletable(self, job: Any, field: str) -> None:
        if job.state not in TERMINAL:
            raise precondition(
                f"Cannot delete PipelineJob {job.name} in state {job.state.name} ({field}): "
                "cancel it and wait until it ends."
            )

    def _batch(self, parent: str, names: list[str]) -> list[Any]:
        requests.check_parent(parent)
        if not names or len(names) > MAX_BATCH:
            raise InputError.of(
                "names",
                f"{len(names)} names; accepted: 1 to {MAX_BATCH} PipelineJob names under {parent}",
            )
        jobs = []
        for index, name in enumerate(names):
            if name.rsplit(f"/{PIPELINE_JOBS.collection}/", 1)[0] != parent:
                raise InputError.of(
                    f"names[{index}]",
                    f"{brief(name)} is not a PipelineJob of {parent}; accepted: "
                    f"{parent}/pipelineJobs/ID",
                )
            jobs.append(self.get_job(name))
        return jobs

    def batch_delete(self, request: ps.BatchDeletePipelineJobsRequest) -> Any:
        jobs = self._batch(request.parent, list(request.names))
        for index, job in enumerate(jobs):
            self._deletable(job, f"names[{index}]")
        for job in jobs:
            self.runs.delete(job.name)
        response = ps.BatchDeletePipelineJobsResponse(pipeline_jobs=jobs)
        return self.state.finished(request.parent, response)

    def batch_cancel(self, request: ps.BatchCancelPipelineJobsRequest) -> Any:
        jobs = self._batch(request.parent, list(request.names))
        cancelled = [self.get_job(job.name) for job in jobs if self.runs.cancel(job.name)]
        response = ps.BatchCancelPipelineJobsResponse(pipeline_jobs=cancelled)
        return self.state.finished(request.parent, response)

    def list_jobs(self, request: ps.ListPipelineJobsRequest) -> ps.ListPipelineJobsResponse:
        found, token = requests.list_page(self.records, PIPELINE_JOBS, request)
        found = [self.runs.read(job) for job in found]
        return ps.ListPipelineJobsResponse(pipeline_jobs=found, next_page_token=token)

    # TrainingPipelines
    def get_training(self, name: str) -> Any:
        requests.check_name(name, TRAINING_PIPELINES.collection)
        try:
            return self.trainings.follow(name)
        except KeyError:
            raise not_found(f"TrainingPipeline {name} not found.") from None

    def check_parent_model(self, pipeline: Any) -> None:
        """A TrainingPipeline's ``parent_model``: a stored Model of its parent, without
        ``model_id`` (UploadModel's rules)."""
        field = "training_pipeline.parent_model"
        requests.check_name(pipeline.parent_model, MODELS.collection)
        if "@" in pipeline.parent_model:
            raise InputError.of(
                field,
                f"{brief(pipeline.parent_model)} names a version; accepted: models/ID (no @)",
            )
        if pipeline.model_id:
            raise InputError.of(
                "training_pipeline.model_id",
                f"{brief(pipeline.model_id)} with parent_model; accepted: one of them",
            )
        if models.get(self.records, pipeline.parent_model) is None:
            raise not_found(f"Model {pipeline.parent_model} not found.")

    def create_training(self, request: ps.CreateTrainingPipelineRequest) -> tp.TrainingPipeline:
        requests.check_parent(request.parent)
        pipeline: Any = request.training_pipeline
        requests.check_display_name(pipeline.display_name, "training_pipeline.display_name")
        requests.check_labels(pipeline.labels, "training_pipeline.labels")
        models.check_id(pipeline.model_id, "training_pipeline.model_id")
        if pipeline.model_to_upload:
            upload = pipeline.model_to_upload
            requests.check_labels(upload.labels, "training_pipeline.model_to_upload.labels")
            models.check_aliases(
                list(upload.version_aliases), "training_pipeline.model_to_upload.version_aliases"
            )
            if upload.artifact_uri:
                requests.check_gcs_uri(
                    upload.artifact_uri, "training_pipeline.model_to_upload.artifact_uri"
                )
            models.check_aliases(
                list(upload.version_aliases), "training_pipeline.model_to_upload.version_aliases"
            )
        if pipeline.parent_model:
            self.check_parent_model(pipeline)
        fields = requests.check_fields("training_pipeline", pipeline)
        spec = training_pipelines.backing_job_spec(pipeline)
        requests.check_job_spec(spec, "training_pipeline.training_task_inputs")
        self.lives.check_job(request.parent, spec, "training_pipeline.training_task_inputs")
        notes = field_coverage.notes("training_pipeline", fields)
        return self.trainings.create(request.parent, pipeline, spec, notes)

    def list_training(
        self, request: ps.ListTrainingPipelinesRequest
    ) -> ps.ListTrainingPipelinesResponse:
        found, token = requests.list_page(self.records, TRAINING_PIPELINES, request)
        followed = [self.trainings.follow(pipeline.name) for pipeline in found]
        return ps.ListTrainingPipelinesResponse(training_pipelines=followed, next_page_token=token)

    def cancel_training(self, request: ps.CancelTrainingPipelineRequest) -> empty_pb2.Empty:
        pipeline = self.get_training(request.name)
        if not self.trainings.cancel(pipeline.name):
            raise precondition(
                f"Cannot cancel TrainingPipeline {pipeline.name}: it is already "
                f"{pipeline.state.name}."
            )
        return empty_pb2.Empty()

    def delete_training(self, request: ps.DeleteTrainingPipelineRequest) -> Any:
        pipeline = self.get_training(request.name)
        if pipeline.state not in training_pipelines.FINAL:
            raise precondition(
                f"Cannot delete TrainingPipeline {pipeline.name} in state {pipeline.state.name}: "
                "cancel it and wait until it ends."
            )
        self.records.delete(TRAINING_PIPELINES, pipeline.name)
        return self.state.finished(pipeline.name)


def handler(
    state: EmulatorState, manager: JobManager, runs: PipelineJobRunner, lives: Lives
) -> Service:
    """The PipelineService handler: PipelineJobs (run by ``runs``) and TrainingPipelines."""
    trainings = training_pipelines.TrainingPipelines(manager)
    pipelines = PipelineService(state, runs, trainings, lives)
    operation, empty = operations_pb2.Operation, empty_pb2.Empty
    answers = {
        "CreatePipelineJob": (pipelines.create_job, pj.PipelineJob),
        "GetPipelineJob": (lambda r: pipelines.get_job(r.name), pj.PipelineJob),
        "ListPipelineJobs": (pipelines.list_jobs, ps.ListPipelineJobsResponse),
        "CancelPipelineJob": (pipelines.cancel_job, empty),
        "DeletePipelineJob": (pipelines.delete_job, operation),
        "BatchDeletePipelineJobs": (pipelines.batch_delete, operation),
        "BatchCancelPipelineJobs": (pipelines.batch_cancel, operation),
        "CreateTrainingPipeline": (pipelines.create_training, tp.TrainingPipeline),
        "GetTrainingPipeline": (lambda r: pipelines.get_training(r.name), tp.TrainingPipeline),
        "ListTrainingPipelines": (pipelines.list_training, ps.ListTrainingPipelinesResponse),
        "CancelTrainingPipeline": (pipelines.cancel_training, empty),
        "DeleteTrainingPipeline": (pipelines.delete_training, operation),
    }
    return service(SERVICE, typed(ps, answers))
