"""``trainpool plan FILE [--json]``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from trainpool.cli._common import fail


def plan_command(
    file: Annotated[Path, typer.Argument(help="Cluster request, YAML or JSON.")],
    as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
    location: str = typer.Option(
        "us-central1", help="Vertex location (checks what it offers; picks the reducer image)."
    ),
    tuning_env: bool = typer.Option(False, "--tuning-env", help="Add all-reduce tuning env."),
    gradient_size_mb: float = typer.Option(100.0, help="Gradient size for all-reduce traffic."),
    allow_unknown_machine_types: bool = typer.Option(
        False,
        "--allow-unknown-machine-types",
        help="Accept machine types the catalog does not know, with a warning.",
    ),
) -> None:
    """Validate a cluster request and print its CustomJobSpec, Reduction Server sizing and cost."""
    from trainpool.plan import PlanError, plan_cluster
    from trainpool.plan.report import markdown

    try:
        plan = plan_cluster(
            file,
            location=location,
            tuning_env=tuning_env,
            gradient_size_mb=gradient_size_mb,
            allow_unknown_machine_types=allow_unknown_machine_types,
        )
    except PlanError as err:
        fail(str(err))
    if as_json:
        typer.echo(json.dumps(plan.to_dict(), indent=2))
    else:
        typer.echo(markdown(plan.to_dict(), title=f"Cluster plan: {file}"))


def register(app: typer.Typer) -> None:
    app.command("plan")(plan_command)
