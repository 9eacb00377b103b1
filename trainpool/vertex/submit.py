"""``trainpool submit``'s one entry point: check, upload, then submit or schedule a pipeline.

:func:`submit_pipeline` does everything between the command line and Vertex AI: it reads
the compiled pipeline, types the ``--param`` values by its inputs
(:mod:`trainpool.spec.pipeline_params`), checks the target, the schedule and everything
that would fail the run after it was created (:mod:`trainpool.vertex.preflight`), uploads
a local ``source_dir`` under the pipeline root (content-addressed,
:mod:`trainpool.images.sources`), builds the request offline and sends it
(:mod:`trainpool.vertex.pipelines`). Bad input raises
:class:`trainpool.errors.InputError` with every problem found, before anything is created.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainpool.errors import InputError, Problem
from trainpool.images import sources
from trainpool.spec.pipeline_params import (
    load_pipeline_spec,
    parse_params,
    pipeline_defaults,
    pipeline_inputs,
)
from trainpool.vertex import pipelines
from trainpool.vertex.preflight import preflight


@dataclass
class Submitted:
    """What was created: a PipelineJob (``job``), or a schedule (``schedule``, with the
    names of the older ones it replaced); ``notes`` are worth knowing but failed nothing."""

    job: Any = None
    schedule: Any = None
    replaced: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def submit_pipeline(
    pipeline: str | Path,
    target: pipelines.Target,
    params: Iterable[str] = (),
    *,
    schedule: str = "",
    timezone: str = "",
    display_name: str = "",
    allow_queueing: bool = False,
) -> Submitted:
    """Submit ``pipeline`` (compiled YAML) with ``params`` (``NAME=VALUE``) to ``target``,
    caching off; with ``schedule`` (cron), create or replace the schedule of the same
    display name instead (a schedule embeds its pipeline; at most one run at a time: a
    run that comes due while one is active is skipped, or queued with ``allow_queueing``).

    Raises :class:`InputError` (every problem: target, parameters, schedule, bucket,
    images, plan) before anything is created; the API's refusal is a
    ``google.api_core.exceptions.GoogleAPICallError``.
    """
    if timezone and not schedule:
        raise InputError.of(
            "--timezone", f"{timezone!r} without --schedule; accepted: --timezone with --schedule"
        )
    if allow_queueing and not schedule:
        raise InputError.of(
            "--allow-queueing", "without --schedule; accepted: --allow-queueing with --schedule"
        )
    spec = load_pipeline_spec(pipeline)
    problems = [Problem.parse(line) for line in pipelines.check_target(target)]
    values: dict[str, Any] = {}
    cron = ""
    try:
        values = parse_params(params, pipeline_inputs(spec))
    except InputError as err:
        problems += err.problems
    try:
        cron = pipelines.cron_with_timezone(schedule, timezone) if schedule else ""
    except InputError as err:
        problems += err.problems
    notes: list[str] = []
    if not problems:
        found = preflight(
            spec, values, pipeline_defaults(spec), target.pipeline_root, target.location, notes
        )
        problems += [Problem.parse(line) for line in found]
    if problems:
        raise InputError(problems)
    for name in sources.SOURCE_PARAMETERS:
        if values.get(name):
            try:
                values[name] = sources.upload_param(name, str(values[name]), target.pipeline_root)
            except FileNotFoundError as err:
                raise InputError.of(name, str(err)) from err
    job_id, job = pipelines.build_pipeline_job(pipeline, target, values, display_name)
    if cron:
        name = display_name or str(spec["pipelineInfo"]["name"])
        request = pipelines.build_schedule(job, target, cron, name, allow_queueing)
        created, deleted = pipelines.create_or_replace_schedule(request, target)
        return Submitted(schedule=created, replaced=deleted, notes=notes)
    return Submitted(job=pipelines.submit(job_id, job, target), notes=notes)
