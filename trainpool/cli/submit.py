"""``trainpool submit PIPELINE.yaml --project P --location L --pipeline-root gs://...``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
    allow_queueing: Annotated[
        bool,
        typer.Option(
            "--allow-queueing",
            help="With --schedule: a run that comes due while one is active waits for it "
            "(default: it is skipped).",
        ),
    ] = False,
) -> None:
    """Submit a PipelineJob with caching off, after checking what would fail it.

    Refuses, creating nothing, when the pipeline root's bucket does not exist, an image
    the tasks run in cannot be pulled, a parameter has the wrong type, or the cluster
    request does not plan. A local folder given as source_dir is uploaded under the
    pipeline root (content-addressed) and the run gets its gs:// URI. With --schedule,
    create or replace the schedule of the same display name instead (a schedule embeds
    its pipeline; at most one run at a time: one that comes due while another is active
    is skipped, or queued with --allow-queueing).
    """
    from google.api_core import exceptions

    from trainpool.errors import InputError
    from trainpool.vertex import clients
    from trainpool.vertex.pipelines import Target
    from trainpool.vertex.submit import submit_pipeline

    target = Target(project, location, pipeline_root, service_account)
    try:
        done = submit_pipeline(
            pipeline,
            target,
            param or [],
            schedule=schedule,
            timezone=timezone,
            display_name=display_name,
            allow_queueing=allow_queueing,
        )
    except InputError as err:
        fail(str(err))
    except exceptions.GoogleAPICallError as err:
        fail(f"Vertex AI refused the request: {err}", 1)
    for note in done.notes:
        typer.echo(f"note: {note}", err=True)
    if done.schedule is not None:
        queue = "queued" if done.schedule.allow_queueing else "skipped"
        typer.echo(
            f"schedule {done.schedule.name} ({done.schedule.cron}, max 1 active run; "
            f"a run due while one is active is {queue})"
        )
        for old in done.replaced:
            typer.echo(f"replaced {old}")
        return
    typer.echo(f"submitted {done.job.name} ({done.job.state.name})")
    typer.echo(clients.console_url(done.job.name))


def register(app: typer.Typer) -> None:
    app.command("submit")(submit_command)
