"""TrainingPipelines: what the SDK's training-job classes create, run by a backing CustomJob.

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
Model Registry (:mod:`trainpool.emulator.model_registry.models`).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import model as model_types
from google.cloud.aiplatform_v1.types import training_pipeline as tp
from google.cloud.aiplatform_v1.types.job_state import JobState
from google.cloud.aiplatform_v1.types.pipeline_state import PipelineState
from google.protobuf import json_format, struct_pb2

from trainpool.emulator.jobs.logs import JobLog
from trainpool.emulator.jobs.manager import TERMINAL, JobManager
from trainpool.emulator.model_registry import models
from trainpool.emulator.records.kinds import CUSTOM_JOBS, TRAINING_PIPELINES, parent_of
from trainpool.errors import InputError
from trainpool.spec import normalize_spec
from trainpool.spec.states import FINAL_PIPELINE_STATES

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


def task_inputs(pipeline: tp.TrainingPipeline) -> dict[str, Any]:
    """``trainingTaskInputs`` as a dict (the SDK writes snake_case keys)."""
    value = tp.TrainingPipeline.pb(pipeline).training_task_inputs
    inputs = json_format.MessageToDict(value)
    if not isinstance(inputs, dict):
        raise InputError.of(
            "training_pipeline.training_task_inputs",
            f"{inputs!r}; accepted: an object holding a CustomJobSpec (workerPoolSpecs, "
            "baseOutputDirectory, scheduling, ...)",
        )
    return inputs


def backing_job_spec(pipeline: tp.TrainingPipeline) -> dict[str, Any]:
    """The CustomJobSpec (REST JSON) a custom-task pipeline runs."""
    definition = pipeline.training_task_definition
    if definition != CUSTOM_TASK:
        raise InputError.of(
            "training_pipeline.training_task_definition",
            f"{definition!r} is not emulated; accepted: {CUSTOM_TASK} (the SDK's "
            "Custom*TrainingJob classes)",
        )
    return normalize_spec(task_inputs(pipeline))


class TrainingPipelines:
    def __init__(self, manager: JobManager) -> None:
        self.manager = manager
        self.state = manager.state
        self.records = manager.state.records
        self._lock = threading.RLock()

    def create(
        self, parent: str, pipeline: Any, spec: dict[str, Any], notes: list[str] | None = None
    ) -> tp.TrainingPipeline:
        """Store ``pipeline`` and start its backing CustomJob, which runs ``spec``; ``notes``
        (fields the emulator does not apply) open the job's log."""
        self.manager.check_quota(spec)
        pipeline.name = (
            f"{parent}/{TRAINING_PIPELINES.collection}/{self.state.new_id('training_pipeline')}"
        )
        pipeline.state = PipelineState.PIPELINE_STATE_QUEUED
        pipeline.create_time = pipeline.update_time = self.state.clock.now()
        job_spec = cj.CustomJobSpec.from_json(json.dumps(spec))
        job = cj.CustomJob(
            display_name=f"{pipeline.display_name}-custom-job",
            job_spec=job_spec,
            labels=dict(pipeline.labels),
        )
        job = self.manager.create(CUSTOM_JOBS, parent, job)
        metadata = struct_pb2.Value()
        json_format.ParseDict({"backingCustomJob": job.name}, metadata)
        tp.TrainingPipeline.pb(pipeline).training_task_metadata.CopyFrom(metadata)
        self.records.insert(TRAINING_PIPELINES, parent, pipeline)
        log = JobLog(self.manager.files(job.name).log)
        for line in notes or []:
            log(f"{line} (TrainingPipeline {pipeline.name})")
        name = pipeline.name
        self.manager.run_custom_job(job.name, on_end=lambda _: self.follow(name, final=True))
        return pipeline

    def follow(self, name: str, final: bool = False) -> Any:
        """The pipeline with its backing job's state; at the end, its error and its model.
        KeyError when there is no such pipeline."""
        with self._lock:
            pipeline: Any = self.records.require(TRAINING_PIPELINES, name)
            if pipeline.state in FINAL:
                return pipeline
            job = self.manager.get(pipeline.training_task_metadata["backingCustomJob"])
            if job is None:
                return pipeline
            if job.state in TERMINAL and self.manager.is_running(job.name) and not final:
                return pipeline  # the job's thread records the end, model included
            final = final or job.state in TERMINAL
            state = _FROM_JOB.get(job.state, pipeline.state)
            if state == pipeline.state and not final:
                return pipeline

            def change(record: Any) -> None:
                if state == PipelineState.PIPELINE_STATE_RUNNING and not record.start_time:
                    record.start_time = job.start_time
                record.state = state
                if final:
                    record.end_time = self.state.clock.now()
                    if job.error.code:
                        record.error = job.error
                    if state == PipelineState.PIPELINE_STATE_SUCCEEDED and record.model_to_upload:
                        self._upload(record, job)

            return self.records.update(TRAINING_PIPELINES, name, change)

    def _upload(self, pipeline: Any, job: cj.CustomJob) -> None:
        model = model_types.Model(pipeline.model_to_upload)
        if not model.display_name:
            model.display_name = pipeline.display_name
        base = job.job_spec.base_output_directory.output_uri_prefix
        if base and not model.artifact_uri:
            model.artifact_uri = f"{base.rstrip('/')}/model"
        model.training_pipeline = pipeline.name
        try:
            pipeline.model_to_upload = models.register(
                self.state.db,
                self.records,
                parent_of(pipeline.name),
                model,
                pipeline.model_id,
                pipeline.parent_model,
            )
        except models.NotFound as err:  # parent_model deleted while the job ran
            pipeline.state = PipelineState.PIPELINE_STATE_FAILED
            pipeline.error = {"code": 5, "message": f"The model was not uploaded: {err}"}

    def cancel(self, name: str) -> bool:
        """Cancel the backing job; False when the pipeline has already ended."""
        pipeline = self.follow(name)
        if pipeline.state in FINAL:
            return False
        job_name = pipeline.training_task_metadata["backingCustomJob"]

        def mark(job: Any) -> None:
            if job.state not in TERMINAL:
                job.state = JobState.JOB_STATE_CANCELLING

        self.manager.update(job_name, mark)
        self.manager.cancel(job_name)
        return True
