"""``trainpool models versions MODEL | bless MODEL VERSION [--alias blessed]``.

The Model Registry as the retraining gate keeps it: one Model, a version per run, the alias
on the blessed one. ``versions`` lists them with their aliases and the metric the gate
recorded in their labels; ``bless`` moves the alias to a version (the rollback: one
MergeVersionAliases, as the SDK's ``ModelRegistry.add_version_aliases`` sends). Against the
emulator when ``VERTEX_AI_EMULATOR_HOST`` is set, else Vertex AI.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from trainpool.cli._common import fail
from trainpool.cli.job_lookup import Location, Project

models_app = typer.Typer(
    help="The Model Registry's versions and aliases: list them, move an alias (roll back).",
    no_args_is_help=True,
)
Model = Annotated[str, typer.Argument(help="Resource name, id, or display name.")]


def _model(model: str, project: str, location: str) -> str:
    from google.api_core import exceptions

    from trainpool.errors import InputError
    from trainpool.vertex.models import find_model

    try:
        return find_model(model, project, location)
    except (InputError, ValueError) as err:
        fail(str(err))
    except exceptions.GoogleAPICallError as err:
        fail(str(err), 1)


def _metric(version: Any) -> str:
    from trainpool.spec import gate

    labels = dict(version.labels)
    if gate.METRIC_LABEL not in labels or gate.VALUE_LABEL not in labels:
        return "-"
    try:
        value = gate.from_label(labels[gate.VALUE_LABEL])
    except ValueError:
        return "-"
    return f"{labels[gate.METRIC_LABEL]} {value:g}"


@models_app.command("versions")
def versions_command(
    model: Model, project: Project = "", location: Location = "us-central1"
) -> None:
    """The Model's versions, oldest first: id, aliases, the gate's recorded metric, created."""
    from google.api_core import exceptions

    from trainpool.cli.schedule import when
    from trainpool.vertex.models import versions

    name = _model(model, project, location)
    try:
        found = versions(name, location)
    except exceptions.GoogleAPICallError as err:
        fail(str(err), 1)
    typer.echo(f"{name}: {len(found)} version(s)")
    typer.echo(f"{'VERSION':<8} {'ALIASES':<24} {'METRIC':<20} {'CREATED':<20} ARTIFACT")
    for v in found:
        aliases = ",".join(sorted(v.version_aliases)) or "-"
        typer.echo(
            f"{v.version_id:<8} {aliases:<24} {_metric(v):<20} "
            f"{when(v.version_create_time):<20} {v.artifact_uri}"
        )


@models_app.command("bless")
def bless_command(
    model: Model,
    version: Annotated[str, typer.Argument(help="The version id to give the alias.")],
    alias: Annotated[str, typer.Option(help="The alias to move.")] = "blessed",
    project: Project = "",
    location: Location = "us-central1",
) -> None:
    """Move ALIAS to VERSION (it leaves the version that held it): roll a promotion back."""
    from google.api_core import exceptions

    from trainpool.errors import InputError
    from trainpool.vertex.models import move_alias

    name = _model(model, project, location)
    try:
        moved = move_alias(name, version, alias, location)
    except InputError as err:
        fail(str(err))
    except exceptions.GoogleAPICallError as err:
        fail(str(err), 1)
    typer.echo(f"{name}@{alias} -> version {moved.version_id}")


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")
