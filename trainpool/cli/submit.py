"""``trainpool submit PIPELINE.yaml --project P --location L --pipeline-root gs://...``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from trainpool.cli._common import fail
from trainpool.cli.run import PARAM_HELP


def submit_command(
    pipeline: Annotated[Path, typer.Argument(help="A compiled pipeline YAML.")],
    project: Annotated[str, typer.Option("--project", help="Google Cloud project id.")],
    location: Annotated[str, typer.Option("--location", help="Vertex AI region: us-central1.")],
    pipeline_root: Annotated[
        str, typer.Option("--pipeline-root", help="gs://BUCKET/PATH for outputs (must exist).")
    ],
    param: Annotated[list[str] | None, typer.Option("--param", help=PARAM_HELP)] = None,
    service_account: Annotated[
        str, typer.Option("--service-account", help="Run as this service account.")
    ] = "",
    schedule: Annotated[
        str, typer.Option("--schedule", help="Cron 'MIN HOUR DAY MONTH WEEKDAY'.")
    ] = "",
    timezone: Annotated[str, typer.Option("--timezone", help="IANA zone of --schedule.")] = "",
    display_name: Annotated[
        str, typer.Option("--display-name", help="Run or schedule name (default: pipeline name).")
    ] = "",
) -> None:
    """Submit a PipelineJob with caching off, after checking what would fail it.

    Refuses, creating nothing, when the pipeline root's bucket does not exist, an image
    the tasks run in cannot be pulled, a parameter has the wrong type, or the cluster
    request does not plan. A local folder given as source_dir is uploaded under the
    pipeline root (content-addressed) and the run gets its gs:// URI. With --schedule,
    create or replace the schedule of the same display name instead (a schedule embeds
    its pipeline; at most one run at a time).
    """
    if timezone and not schedule:
        fail(f"--timezone: {timezone!r} without --schedule; accepted: --timezone with --schedule")
    from google.api_core import exceptions

    from trainpool.images import sources
    from trainpool.localrun import ParamError, load_pipeline_spec, parse_params, pipeline_inputs
    from trainpool.localrun.params import pipeline_defaults
    from trainpool.localrun.runner import SOURCE_PARAMETERS
    from trainpool.vertex import clients, pipelines
    from trainpool.vertex.preflight import preflight

    target = pipelines.Target(project, location, pipeline_root, service_account)
    try:
        spec = load_pipeline_spec(pipeline)
    except (OSError, ValueError) as err:
        fail(f"PIPELINE: {err}")
    problems = pipelines.check_target(target)
    values: dict[str, Any] = {}
    cron = ""
    try:
        values = parse_params(param or [], pipeline_inputs(spec))
    except ParamError as err:
        problems += err.problems
    try:
        cron = pipelines.cron_with_timezone(schedule, timezone) if schedule else ""
    except pipelines.SubmitError as err:
        problems += err.problems
    notes: list[str] = []
    if not problems:
        problems += preflight(spec, values, pipeline_defaults(spec), pipeline_root, location, notes)
    if problems:
        fail("\n".join(problems))
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    try:
        for name in SOURCE_PARAMETERS:
            if values.get(name):
                values[name] = sources.upload_param(name, str(values[name]), pipeline_root)
    except (ValueError, FileNotFoundError) as err:
        fail(str(err))
    try:
        job_id, job = pipelines.build_pipeline_job(pipeline, target, values, display_name)
    except pipelines.SubmitError as err:
        fail(str(err))
    try:
        if cron:
            name = display_name or str(spec["pipelineInfo"]["name"])
            request = pipelines.build_schedule(job, target, cron, name)
            created, deleted = pipelines.create_or_replace_schedule(request, target)
            typer.echo(f"schedule {created.name} ({created.cron}, max 1 concurrent run)")
            for old in deleted:
                typer.echo(f"replaced {old}")
            return
        submitted = pipelines.submit(job_id, job, target)
    except exceptions.GoogleAPICallError as err:
        fail(f"Vertex AI refused the request: {err}", 1)
    typer.echo(f"submitted {submitted.name} ({submitted.state.name})")
    typer.echo(clients.console_url(submitted.name))


def register(app: typer.Typer) -> None:
    app.command("submit")(submit_command)
