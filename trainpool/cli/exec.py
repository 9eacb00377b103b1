"""``trainpool exec [--root DIR] [--project P] -- COMMAND [ARGS...]``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from trainpool.cli._common import fail


def exec_command(
    command: Annotated[
        list[str],
        typer.Argument(help="The command and its arguments, after --.", metavar="COMMAND"),
    ],
    root: Annotated[
        Path | None,
        typer.Option(help="The local store (default: $TRAINPOOL_HOME or ./.trainpool)."),
    ] = None,
    project: Annotated[
        str,
        typer.Option(help="GOOGLE_CLOUD_PROJECT for COMMAND, when it does not set its own."),
    ] = "",
) -> None:
    """Run COMMAND unchanged with every Google client it uses pointed at the local emulator.

    The Vertex AI SDK (aiplatform.init, CustomJob, CustomTrainingJob, HyperparameterTuningJob,
    PipelineJob, Model.upload, schedules), the gapic clients, Google Cloud Pipeline
    Components' launchers, google-cloud-storage and `gcloud storage` talk to the emulator
    serving --root (started, with its Cloud Storage door, when none serves it). Exits with
    COMMAND's exit status; SIGTERM sent to trainpool exec is passed on.
    """
    from trainpool.emulated.command_run import run
    from trainpool.errors import InputError

    try:
        code = run(command, root, project)
    except (InputError, OSError) as err:
        fail(str(err))
    sys.exit(code)


def register(app: typer.Typer) -> None:
    app.command(
        "exec",
        context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
    )(exec_command)
