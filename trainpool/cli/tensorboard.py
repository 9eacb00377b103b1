"""``trainpool tensorboard NAME``: a Vertex TensorBoard experiment in the real TensorBoard, locally.

NAME is an Experiment's id, a CustomJob's id (the experiment its TensorBoard uploads went to)
or a TensorboardExperiment's resource name. Against the emulator when
``VERTEX_AI_EMULATOR_HOST`` is set (``trainpool exec``), else Vertex AI in ``--project`` /
``--location``. Its runs' scalars are exported into ``--logdir`` (default
``<store>/tensorboard/<id>`` on the emulator, ``./tensorboard/<id>`` otherwise) and
TensorBoard serves them on ``127.0.0.1:--port``; ``--export-only`` writes and stops. Needs
the ``tensorboard`` extra.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from trainpool.cli._common import fail
from trainpool.cli.job_lookup import Location, Project, parent


def tensorboard_command(
    name: Annotated[str, typer.Argument(help="Experiment id, CustomJob id or resource name.")],
    project: Project = "",
    location: Location = "us-central1",
    logdir: Annotated[Path | None, typer.Option(help="Where the event files are written.")] = None,
    port: Annotated[int, typer.Option(help="TensorBoard's port on 127.0.0.1.")] = 6006,
    export_only: Annotated[
        bool, typer.Option("--export-only", help="Write the event files; start no server.")
    ] = False,
) -> None:
    """Open a Vertex TensorBoard experiment (an Experiment's, a job's) in TensorBoard."""
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        fail("TensorBoard is not installed; accepted: pip install 'trainpool[tensorboard]'")
    from google.api_core import exceptions

    from trainpool import config, emulator_client
    from trainpool.errors import InputError
    from trainpool.vertex import tensorboards
    from trainpool.vertex.clients import tensorboard_client

    where = parent(project, location)
    client = tensorboard_client(location)
    try:
        found = tensorboards.find(client, where, name)
        leaf = name.rsplit("/", 1)[-1]
        if logdir is None:
            base = emulator_client.current().root if config.emulator_host() else Path.cwd()
            logdir = base / "tensorboard" / leaf
        for experiment in found:
            target = logdir if len(found) == 1 else logdir / experiment.split("/")[-3]
            for run, points in tensorboards.export(client, experiment, target).items():
                typer.echo(f"{experiment}/runs/{run}: {points} points -> {target / run}")
    except InputError as err:
        fail(str(err))
    except exceptions.GoogleAPICallError as err:
        fail(str(err), 1)
    if export_only:
        return
    command = shutil.which("tensorboard") or ""
    argv = [command] if command else [sys.executable, "-m", "tensorboard.main"]
    argv += ["--logdir", str(logdir), "--host", "127.0.0.1", "--port", str(port)]
    typer.echo(f"TensorBoard on http://127.0.0.1:{port} (Ctrl-C ends it)")
    raise typer.Exit(subprocess.call(argv))


def register(app: typer.Typer) -> None:
    app.command("tensorboard")(tensorboard_command)
