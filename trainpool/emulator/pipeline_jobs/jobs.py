"""A PipelineJob as ``CreatePipelineJob`` makes it: checked, named, stored QUEUED, started.

:func:`create` is the one create path: ``PipelineService.CreatePipelineJob``
(:mod:`trainpool.emulator.pipeline_jobs.pipeline_service`) and a Schedule's runs
(:mod:`trainpool.emulator.schedules.firer`) both call it, so a scheduled run is created
exactly as a client's. The only difference is ``schedule_name`` (PipelineJob field 22,
pipeline_job.proto: "Output only. The schedule resource name. Only returned if the
Pipeline is created by Schedule API."), which a client cannot set: the firer passes it,
and a client's value is dropped as an output-only field is.

What Vertex fills in on Create and the emulator fills the same (:func:`fill_defaults`):

- ``service_account``, when the request names none: the project's Compute Engine default
  service account (``PipelineJob.service_account``: "If not specified, the Compute Engine
  default service account in the project will be used", pipeline_job.proto;
  :data:`trainpool.emulator.api.resource_manager.DEFAULT_SERVICE_ACCOUNT`, project number 0);
- the label ``vertex-ai-pipelines-run-billing-id``, a number Vertex adds to every run's labels
  (the Vertex AI SDK reads it back as the run's id: google-cloud-aiplatform 1.165.1,
  ``preview/pipelinejob/pipeline_jobs.py``, ``int(original_pipeline_job.labels[
  "vertex-ai-pipelines-run-billing-id"])``);
- ``state`` QUEUED, ``create_time`` and ``update_time`` (output-only fields, pipeline_job.proto).

A user-chosen ``pipeline_job_id`` follows the Vertex AI SDK's rule ``[a-z][-a-z0-9]{0,127}``
(google-cloud-aiplatform 1.165.1 ``constants/pipeline.py`` ``_VALID_NAME_PATTERN``; the
proto comment on ``CreatePipelineJobRequest.pipeline_job_id``: "less than 128 characters, and
valid characters are /[a-z][0-9]-/"): a first character that is a digit or '-' is refused.
An id the emulator generates is a number, as Vertex's are.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from google.cloud.aiplatform_v1.types import pipeline_job as pj
from google.cloud.aiplatform_v1.types.pipeline_state import PipelineState
from google.protobuf import json_format

from trainpool.emulator import field_coverage
from trainpool.emulator.api.resource_manager import DEFAULT_SERVICE_ACCOUNT
from trainpool.emulator.pipeline_jobs.runs import PipelineJobRunner
from trainpool.emulator.records.kinds import PIPELINE_JOBS
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError, brief
from trainpool.spec import kfp_v1

JOB_ID = re.compile(r"^[a-z][-a-z0-9]{0,127}$")
BILLING_LABEL = "vertex-ai-pipelines-run-billing-id"


def fill_defaults(state: EmulatorState, job: Any) -> None:
    """What Vertex fills in a created PipelineJob the request left empty (module docstring)."""
    if not job.service_account:
        job.service_account = DEFAULT_SERVICE_ACCOUNT
    job.labels[BILLING_LABEL] = state.new_id("pipeline-billing")


def create(
    state: EmulatorState, runs: PipelineJobRunner, request: Any, *, schedule_name: str = ""
) -> Any:
    """Check ``request`` (a ``CreatePipelineJobRequest`` whose ``parent`` the caller has
    checked), store its PipelineJob QUEUED (``schedule_name`` set when a Schedule creates
    it) and start its local run; the stored job. Raises :class:`InputError` for a bad
    request and :class:`trainpool.emulator.records.resources.AlreadyExists` for a taken id,
    before anything is stored."""
    job: Any = request.pipeline_job
    fields = field_coverage.request_fields("pipeline_job", job)
    spec, values = _checked(request, fields)
    job_id = request.pipeline_job_id or state.new_id("pipeline")
    fill_defaults(state, job)
    job.name = f"{request.parent}/{PIPELINE_JOBS.collection}/{job_id}"
    job.state = PipelineState.PIPELINE_STATE_QUEUED
    job.schedule_name = schedule_name
    job.create_time = job.update_time = state.clock.now()
    state.records.insert(PIPELINE_JOBS, request.parent, job)
    notes = field_coverage.notes("pipeline_job", fields)
    if notes:
        _write_notes(state.home.pipeline_run(job_id) / "run.log", notes)
    runs.start(job, spec, values)
    return state.records.require(PIPELINE_JOBS, job.name)


def _checked(request: Any, fields: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The compiled pipeline spec and runtime values of ``request``, its PipelineJob's
    ``fields`` refused where the emulator refuses them; InputError for a bad request."""
    job: Any = request.pipeline_job
    problems = field_coverage.refusals("pipeline_job", fields)
    if problems:
        raise InputError(problems)
    message = pj.PipelineJob.pb(job)
    spec = json_format.MessageToDict(message.pipeline_spec)
    if "root" not in spec or "pipelineInfo" not in spec:
        raise InputError.of(
            "pipeline_job.pipeline_spec",
            "has no 'root' and 'pipelineInfo'; accepted: a compiled KFP pipeline (the "
            "YAML `trainpool compile` writes)",
        )
    # the field the spec's schema version binds: parameters for kfp 1.8's 2.0.0, else
    # parameter_values (trainpool.spec.kfp_v1, with Vertex's sources)
    values = kfp_v1.runtime_values(spec, json_format.MessageToDict(message.runtime_config))
    root_uri = job.runtime_config.gcs_output_directory
    if not root_uri.startswith("gs://"):
        raise InputError.of(
            "pipeline_job.runtime_config.gcs_output_directory",
            f"{root_uri!r}; accepted: a pipeline root such as gs://BUCKET/PATH",
        )
    declared = spec["root"].get("inputDefinitions", {}).get("parameters", {})
    unknown = sorted(set(values) - set(declared))
    if unknown:
        raise InputError.of(
            "pipeline_job.runtime_config."
            + ("parameters" if kfp_v1.is_v1(spec) else "parameter_values"),
            f"{brief(', '.join(unknown), 200, quoted=False)} not declared by the pipeline; "
            f"accepted: {', '.join(sorted(declared)) or 'none'}",
        )
    job_id = request.pipeline_job_id
    if job_id and not JOB_ID.fullmatch(job_id):
        raise InputError.of(
            "pipeline_job_id",
            f"{brief(job_id)}; accepted: up to 128 lowercase letters, digits and '-', "
            "starting with a letter ([a-z][-a-z0-9]{0,127}, the Vertex AI SDK's rule)",
        )
    return spec, values


def _write_notes(log: Path, notes: list[str]) -> None:
    """The request's fields not applied, said first in the run's log ``log``."""
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as handle:
            handle.writelines(f"{line}\n" for line in notes)
    except OSError:
        pass  # the run cannot write its log either: its start fails the job, saying why
