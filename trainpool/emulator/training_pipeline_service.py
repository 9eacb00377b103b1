"""``PipelineService``'s TrainingPipeline methods: what the SDK's training-job classes create.

``aiplatform.CustomTrainingJob``, ``CustomContainerTrainingJob`` and
``CustomPythonPackageTrainingJob`` create a TrainingPipeline whose
``trainingTaskDefinition`` is the custom task schema and whose ``trainingTaskInputs`` hold
the CustomJobSpec (worker pools, ``baseOutputDirectory``, ``scheduling``, ...), then poll
GetTrainingPipeline until it ends (googleapis/python-aiplatform
``google/cloud/aiplatform/training_jobs.py``, ``_TrainingJob._run_job`` and
``_block_until_complete``; REST reference:
https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.trainingPipelines).

Here a created pipeline runs one backing CustomJob (a real JobService record, named in
``trainingTaskMetadata.backingCustomJob`` as on Vertex) with every replica, and its state
follows that job's: PENDING until it runs, RUNNING, then SUCCEEDED / FAILED (the job's
error) / CANCELLED. With ``modelToUpload``, a succeeded pipeline uploads the model, whose
``artifactUri`` is ``<baseOutputDirectory>/model`` (the job's ``AIP_MODEL_DIR``), to the
emulator's ModelService (:mod:`trainpool.emulator.model_service`).

These methods share the ``google.cloud.aiplatform.v1.PipelineService`` name with the
PipelineJob methods of :mod:`trainpool.emulator.pipeline_service`; gRPC asks each
registered handler in turn, and each answers only its own methods.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import Any

import grpc
from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import model as model_types
from google.cloud.aiplatform_v1.types import pipeline_service as ps
from google.cloud.aiplatform_v1.types import training_pipeline as tp
from google.cloud.aiplatform_v1.types.job_state import JobState
from google.cloud.aiplatform_v1.types.pipeline_state import PipelineState
from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2, json_format, struct_pb2

from trainpool.emulator import model_service, validation
from trainpool.emulator.job_store import CUSTOM, TERMINAL
from trainpool.emulator.list_filter import page_after, paginate
from trainpool.emulator.rpc import invalid, not_found, precondition, unary
from trainpool.emulator.runner import Controls, Runner, runner_for
from trainpool.emulator.state import EmulatorState
from trainpool.spec import normalize_spec
from trainpool.spec.states import FINAL_PIPELINE_STATES

SERVICE = "google.cloud.aiplatform.v1.PipelineService"
KIND = "trainingPipelines"
CUSTOM_TASK = "gs://google-cloud-aiplatform/schema/trainingjob/definition/custom_task_1.0.0.yaml"
FINAL = frozenset(getattr(PipelineState, name) for name in FINAL_PIPELINE_STATES)
_FROM_JOB = {
    JobState.JOB_STATE_QUEUED: PipelineState.PIPELINE_STATE_PENDING,
    JobState.JOB_STATE_PENDING: PipelineState.PIPELINE_STATE_PENDING,
    JobState.JOB_STATE_RUNNING: PipelineState.PIPELINE_STATE_RUNNING,
    JobState.JOB_STATE_CANCELLING: PipelineState.PIPELINE_STATE_CANCELLING,
    JobState.JOB_STATE_SUCCEEDED: PipelineState.PIPELINE_STATE_SUCCEEDED,
    JobState.JOB_STATE_FAILED: PipelineState.PIPELINE_STATE_FAILED,
    JobState.JOB_STATE_CANCELLED: PipelineState.PIPELINE_STATE_CANCELLED,
}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS training_pipelines (
  name TEXT PRIMARY KEY, parent TEXT NOT NULL, seq INTEGER NOT NULL, proto BLOB NOT NULL
);
"""


def _now() -> datetime:
    return datetime.now(timezone.utc)


def task_inputs(pipeline: tp.TrainingPipeline) -> dict[str, Any]:
    """``trainingTaskInputs`` as a dict (the SDK writes snake_case keys)."""
    value = tp.TrainingPipeline.pb(pipeline).training_task_inputs
    inputs = json_format.MessageToDict(value)
    if not isinstance(inputs, dict):
        raise invalid(
            f"training_pipeline.training_task_inputs: {inputs!r}; accepted: an object holding "
            "a CustomJobSpec (workerPoolSpecs, baseOutputDirectory, scheduling, ...)"
        )
    return inputs


def backing_job_spec(pipeline: tp.TrainingPipeline) -> cj.CustomJobSpec:
    """The CustomJobSpec a custom-task pipeline runs, checked like any CustomJob's."""
    definition = pipeline.training_task_definition
    if definition != CUSTOM_TASK:
        raise invalid(
            f"training_pipeline.training_task_definition: {definition!r} is not emulated; "
            f"accepted: {CUSTOM_TASK} (the SDK's Custom*TrainingJob classes)"
        )
    spec = normalize_spec(task_inputs(pipeline))
    validation.check_job_spec(spec, "training_pipeline.training_task_inputs")
    return cj.CustomJobSpec(json_format.ParseDict(spec, cj.CustomJobSpec.pb(cj.CustomJobSpec())))


class TrainingPipelines:
    def __init__(self, state: EmulatorState, runner: Runner) -> None:
        self.state = state
        self.runner = runner
        self.db = state.db
        self.db.executescript(_SCHEMA)
        self._lock = threading.RLock()

    def _save(self, pipeline: tp.TrainingPipeline) -> None:
        pipeline.update_time = _now()
        self.db.execute(
            "UPDATE training_pipelines SET proto = ? WHERE name = ?",
            (tp.TrainingPipeline.serialize(pipeline), pipeline.name),
        )

    def _load(self, name: str) -> tp.TrainingPipeline:
        validation.check_name(name, KIND)
        rows = self.db.execute("SELECT proto FROM training_pipelines WHERE name = ?", (name,))
        if not rows:
            raise not_found(f"TrainingPipeline {name} not found.")
        return tp.TrainingPipeline.deserialize(rows[0]["proto"])

    def create(self, request: ps.CreateTrainingPipelineRequest) -> tp.TrainingPipeline:
        validation.check_parent(request.parent)
        pipeline: Any = request.training_pipeline  # proto-plus enums are typed as int
        if not pipeline.display_name:
            raise invalid("training_pipeline.display_name: '' is empty; accepted: a non-empty name")
        job_spec = backing_job_spec(pipeline)
        seq = self.state.new_id("training_pipeline")
        pipeline.name = f"{request.parent}/{KIND}/{seq}"
        pipeline.state = PipelineState.PIPELINE_STATE_QUEUED
        pipeline.create_time = pipeline.update_time = _now()
        job = cj.CustomJob(
            display_name=f"{pipeline.display_name}-custom-job",
            job_spec=job_spec,
            labels=dict(pipeline.labels),
        )
        job = self.runner.store.insert(CUSTOM, request.parent, job)
        metadata = struct_pb2.Value()
        json_format.ParseDict({"backingCustomJob": job.name}, metadata)
        tp.TrainingPipeline.pb(pipeline).training_task_metadata.CopyFrom(metadata)
        self.db.execute(
            "INSERT INTO training_pipelines (name, parent, seq, proto) VALUES (?, ?, ?, ?)",
            (pipeline.name, request.parent, int(seq), tp.TrainingPipeline.serialize(pipeline)),
        )
        name = pipeline.name

        def work(job_name: str, controls: Controls) -> None:
            try:
                self.runner.run_custom_job(job_name, controls)
            finally:
                self._follow(name, final=True)

        self.runner.submit(job.name, work)
        return pipeline

    def _follow(self, name: str, final: bool = False) -> tp.TrainingPipeline:
        """The pipeline with its backing job's state; at the end, its error and its model."""
        with self._lock:
            pipeline: Any = self._load(name)
            if pipeline.state in FINAL:
                return pipeline
            job = self.runner.store.get(pipeline.training_task_metadata["backingCustomJob"])
            if job is None:
                return pipeline
            if job.state in TERMINAL and self.runner.is_running(job.name) and not final:
                return pipeline  # the job's thread records the end, model included
            final = final or job.state in TERMINAL
            state = _FROM_JOB.get(job.state, pipeline.state)
            if state == pipeline.state and not final:
                return pipeline
            if state == PipelineState.PIPELINE_STATE_RUNNING and not pipeline.start_time:
                pipeline.start_time = job.start_time
            pipeline.state = state
            if final:
                pipeline.end_time = _now()
                if job.error.code:
                    pipeline.error = job.error
                if state == PipelineState.PIPELINE_STATE_SUCCEEDED and pipeline.model_to_upload:
                    self._upload(pipeline, job)
            self._save(pipeline)
            return pipeline

    def _upload(self, pipeline: tp.TrainingPipeline, job: cj.CustomJob) -> None:
        model = model_types.Model(pipeline.model_to_upload)
        if not model.display_name:
            model.display_name = pipeline.display_name
        base = job.job_spec.base_output_directory.output_uri_prefix
        if base and not model.artifact_uri:
            model.artifact_uri = f"{base.rstrip('/')}/model"
        model.training_pipeline = pipeline.name
        parent = pipeline.name.rsplit(f"/{KIND}/", 1)[0]
        uploaded = model_service.Models(self.state).insert(parent, model, pipeline.model_id)
        pipeline.model_to_upload = uploaded

    def get(self, request: ps.GetTrainingPipelineRequest) -> tp.TrainingPipeline:
        return self._follow(request.name)

    def list(self, request: ps.ListTrainingPipelinesRequest) -> ps.ListTrainingPipelinesResponse:
        validation.check_parent(request.parent)
        rows = self.db.execute(
            "SELECT seq, name FROM training_pipelines WHERE parent = ? AND seq > ? ORDER BY seq",
            (request.parent, page_after(request.page_token)),
        )
        items, token = paginate([(r["seq"], self._follow(r["name"])) for r in rows], request)
        return ps.ListTrainingPipelinesResponse(training_pipelines=items, next_page_token=token)

    def cancel(self, request: ps.CancelTrainingPipelineRequest) -> empty_pb2.Empty:
        pipeline = self._follow(request.name)
        if pipeline.state in FINAL:
            raise precondition(
                f"Cannot cancel TrainingPipeline {pipeline.name}: it is already "
                f"{pipeline.state.name}."
            )
        job_name = pipeline.training_task_metadata["backingCustomJob"]

        def mark(job: Any) -> None:
            if job.state not in TERMINAL:
                job.state = JobState.JOB_STATE_CANCELLING

        self.runner.store.update(job_name, mark)
        self.runner.cancel(job_name)
        return empty_pb2.Empty()

    def delete(self, request: ps.DeleteTrainingPipelineRequest) -> operations_pb2.Operation:
        pipeline = self._follow(request.name)
        if pipeline.state not in FINAL:
            raise precondition(
                f"Cannot delete TrainingPipeline {pipeline.name} in state {pipeline.state.name}: "
                "cancel it and wait until it ends."
            )
        self.db.execute("DELETE FROM training_pipelines WHERE name = ?", (pipeline.name,))
        response = any_pb2.Any()
        response.Pack(empty_pb2.Empty())
        return operations_pb2.Operation(
            name=f"{pipeline.name}/operations/{self.state.new_id('operation')}",
            done=True,
            response=response,
        )


def handler(state: EmulatorState) -> grpc.GenericRpcHandler:
    """The TrainingPipeline methods of ``google.cloud.aiplatform.v1.PipelineService``."""
    service = TrainingPipelines(state, runner_for(state))
    ser = tp.TrainingPipeline.serialize
    methods = {
        "CreateTrainingPipeline": unary(service.create, ps.CreateTrainingPipelineRequest, ser),
        "GetTrainingPipeline": unary(service.get, ps.GetTrainingPipelineRequest, ser),
        "ListTrainingPipelines": unary(
            service.list,
            ps.ListTrainingPipelinesRequest,
            ps.ListTrainingPipelinesResponse.serialize,
        ),
        "CancelTrainingPipeline": unary(
            service.cancel, ps.CancelTrainingPipelineRequest, empty_pb2.Empty.SerializeToString
        ),
        "DeleteTrainingPipeline": unary(
            service.delete,
            ps.DeleteTrainingPipelineRequest,
            operations_pb2.Operation.SerializeToString,
        ),
    }
    return grpc.method_handlers_generic_handler(SERVICE, methods)
