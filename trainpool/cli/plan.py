"""``trainpool plan FILE [--json]`` and ``trainpool catalog``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from trainpool.cli._common import fail


def plan_command(
    file: Annotated[Path, typer.Argument(help="Cluster request, YAML or JSON.")],
    as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
    location: str = typer.Option("us-central1", help="Vertex location (picks the reducer image)."),
    tuning_env: bool = typer.Option(False, "--tuning-env", help="Add all-reduce tuning env."),
    gradient_size_mb: float = typer.Option(100.0, help="Gradient size for all-reduce traffic."),
) -> None:
    """Validate a cluster request and print its CustomJobSpec, Reduction Server sizing and cost."""
    from trainpool.plan import PlanError, plan_cluster
    from trainpool.plan.report import markdown

    try:
        plan = plan_cluster(
            file, location=location, tuning_env=tuning_env, gradient_size_mb=gradient_size_mb
        )
    except PlanError as err:
        fail(str(err))
    if as_json:
        typer.echo(json.dumps(plan.to_dict(), indent=2))
    else:
        typer.echo(markdown(plan.to_dict(), title=f"Cluster plan: {file}"))


def catalog_command(
    kind: str = typer.Option("all", help="machines, accelerators or all."),
    name: str = typer.Option("", help="Only names containing this text."),
    gpu: bool = typer.Option(False, "--gpu", help="Only machines with GPUs built in."),
    min_gbps: float = typer.Option(0.0, help="Only machines with at least this egress."),
    as_json: bool = typer.Option(False, "--json", help="Print rows as JSON."),
) -> None:
    """List machine types and accelerators Vertex training supports, with egress and prices."""
    from trainpool.catalog.listing import accelerator_rows, machine_rows, table

    kinds = ("all", "machines", "accelerators")
    if kind not in kinds:
        fail(f"--kind: {kind!r} is not accepted; accepted: {', '.join(kinds)}")
    sections = []
    if kind in ("all", "machines"):
        sections.append(("machines", machine_rows(name=name, gpu_only=gpu, min_gbps=min_gbps)))
    if kind in ("all", "accelerators"):
        sections.append(("accelerators", accelerator_rows(name=name)))
    if as_json:
        typer.echo(json.dumps(dict(sections), indent=2))
        return
    for title, rows in sections:
        typer.echo(f"{title} ({len(rows)})")
        typer.echo(table(rows))


def register(app: typer.Typer) -> None:
    app.command("plan")(plan_command)
    app.command("catalog")(catalog_command)
