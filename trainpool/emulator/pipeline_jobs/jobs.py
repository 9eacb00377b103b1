"""A PipelineJob as ``CreatePipelineJob`` makes it: checked, named, stored QUEUED, started.

:func:`create` is the one create path: ``PipelineService.CreatePipelineJob``
(:mod:`trainpool.emulator.api.pipeline_service`) and a Schedule's runs
(:mod:`trainpool.emulator.schedules.firer`) both call it, so a scheduled run is created
exactly as a client's. The only difference is ``schedule_name`` (PipelineJob field 22,
pipeline_job.proto: "Output only. The schedule resource name. Only returned if the
Pipeline is created by Schedule API."), which a client cannot set: the firer passes it,
and a client's value is dropped as an output-only field is.
"""

from __future__ import annotations

import re
from typing import Any

from google.cloud.aiplatform_v1.types import pipeline_job as pj
from google.cloud.aiplatform_v1.types.pipeline_state import PipelineState
from google.protobuf import json_format

from trainpool.emulator import field_coverage
from trainpool.emulator.pipeline_jobs.runs import PipelineRuns
from trainpool.emulator.records.kinds import PIPELINE_JOBS
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError, brief

JOB_ID = re.compile(r"^[a-z0-9][-a-z0-9]{0,127}$")


def create(
    state: EmulatorState, runs: PipelineRuns, request: Any, *, schedule_name: str = ""
) -> Any:
    """Check ``request`` (a ``CreatePipelineJobRequest`` whose ``parent`` the caller has
    checked), store its PipelineJob QUEUED (``schedule_name`` set when a Schedule creates
    it) and start its local run; the stored job. Raises :class:`InputError` for a bad
    request and :class:`trainpool.emulator.records.resources.AlreadyExists` for a taken id,
    before anything is stored."""
    job: Any = request.pipeline_job
    fields = field_coverage.request_fields("pipeline_job", job)
    problems = field_coverage.refusals("pipeline_job", fields)
    if problems:
        raise InputError(problems)
    message = pj.PipelineJob.pb(job)
    spec = json_format.MessageToDict(message.pipeline_spec)
    values = json_format.MessageToDict(message.runtime_config).get("parameterValues", {})
    if "root" not in spec or "pipelineInfo" not in spec:
        raise InputError.of(
            "pipeline_job.pipeline_spec",
            "has no 'root' and 'pipelineInfo'; accepted: a compiled KFP pipeline (the "
            "YAML `trainpool compile` writes)",
        )
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
            "pipeline_job.runtime_config.parameter_values",
            f"{brief(', '.join(unknown), 200, quoted=False)} not declared by the pipeline; "
            f"accepted: {', '.join(sorted(declared)) or 'none'}",
        )
    job_id = request.pipeline_job_id or state.new_id("pipeline")
    if not JOB_ID.fullmatch(job_id):
        raise InputError.of(
            "pipeline_job_id",
            f"{brief(job_id)}; accepted: up to 128 lowercase letters, digits and hyphens, "
            "starting with a letter or digit",
        )
    job.name = f"{request.parent}/{PIPELINE_JOBS.collection}/{job_id}"
    job.state = PipelineState.PIPELINE_STATE_QUEUED
    job.schedule_name = schedule_name
    job.create_time = job.update_time = state.clock.now()
    state.records.insert(PIPELINE_JOBS, request.parent, job)
    notes = field_coverage.notes("pipeline_job", fields)
    if notes:
        log = state.home.pipeline_run(job_id) / "run.log"
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "a", encoding="utf-8") as handle:
                handle.writelines(f"{line}\n" for line in notes)
        except OSError:
            pass  # the run cannot write its log either: its start fails the job, saying why
    runs.start(job, spec, values)
    return state.records.require(PIPELINE_JOBS, job.name)
