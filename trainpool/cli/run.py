"""``trainpool run PIPELINE.yaml --local [--param NAME=VALUE ...] [--root DIR]``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from trainpool.cli._common import fail
from trainpool.config import default_root
from trainpool.emulated.defaults import DEFAULT_LOCATION, DEFAULT_PIPELINE_ROOT, DEFAULT_PROJECT

PARAM_HELP = "NAME=VALUE, typed by the pipeline's inputs (JSON for lists and dicts); repeatable."


def run_command(
    pipeline: Annotated[Path, typer.Argument(help="A compiled pipeline YAML.")],
    local: Annotated[
        bool, typer.Option("--local", help="Run with kfp.local against the local emulator.")
    ] = False,
    param: Annotated[list[str] | None, typer.Option("--param", help=PARAM_HELP)] = None,
    root: Annotated[
        Path | None,
        typer.Option(
            "--root",
            help="The local store (default: the named emulator's, else $TRAINPOOL_HOME, "
            "else ./.trainpool).",
        ),
    ] = None,
    project: Annotated[
        str,
        typer.Option(
            envvar="GOOGLE_CLOUD_PROJECT", help="The run's project (fills the YAML's placeholder)."
        ),
    ] = DEFAULT_PROJECT,
    location: Annotated[str, typer.Option(help="The run's region.")] = DEFAULT_LOCATION,
    pipeline_root: Annotated[
        str, typer.Option("--pipeline-root", help="gs://BUCKET/PATH in the local store.")
    ] = DEFAULT_PIPELINE_ROOT,
) -> None:
    """Run a compiled pipeline locally and print what it did; exit 1 when it fails.

    Uses the emulator VERTEX_AI_EMULATOR_HOST names, else the one serving the root,
    else starts one; shows task, job, replica and trial progress while it runs. A local
    folder given as source_dir is uploaded under the pipeline root first, as `trainpool
    submit` does. SIGTERM or Ctrl-C cancels the run's jobs and exits 128 + the signal number.
    """
    if not local:
        fail("--local: not given; accepted: --local (to run on Vertex AI, use `trainpool submit`)")
    import sys

    from rich.console import Console

    from trainpool.emulated.pipeline_run import run_local
    from trainpool.emulated.summary import job_lines
    from trainpool.errors import InputError
    from trainpool.spec.pipeline_params import (
        load_pipeline_spec,
        parse_params,
        pipeline_inputs,
    )

    try:
        spec = load_pipeline_spec(pipeline)
        values = parse_params(param or [], pipeline_inputs(spec))
    except InputError as err:
        fail(str(err))
    except (OSError, ValueError) as err:
        fail(f"PIPELINE: {err}")
    try:
        result = run_local(
            pipeline,
            values,
            root,
            console=Console(file=sys.stdout),
            project=project,
            location=location,
            pipeline_root=pipeline_root,
        )
    except ValueError as err:
        fail(str(err))
    for line in job_lines(result.jobs, result.root or default_root()):
        typer.echo(line)
    if result.signal is not None:
        typer.echo(f"pipeline {result.pipeline} CANCELLED: {result.error}", err=True)
        fail(f"transcript: {result.transcript}", 128 + result.signal)
    if not result.ok:
        typer.echo(f"pipeline {result.pipeline} FAILED: {result.error}", err=True)
        for task in result.tasks:
            if task.state == "FAILED":
                typer.echo(f"task {task.name}, last lines:", err=True)
                for line in task.tail:
                    typer.echo(f"  {line}", err=True)
        fail(f"transcript: {result.transcript}", 1)
    typer.echo(f"pipeline {result.pipeline} SUCCEEDED in {result.seconds:.1f}s")
    typer.echo(f"transcript: {result.transcript}")
    typer.echo("outputs: " + json.dumps(result.outputs, indent=2, sort_keys=True, default=str))


def register(app: typer.Typer) -> None:
    app.command("run")(run_command)
