"""``trainpool catalog``: machine types, TPUs and accelerators, and where an accelerator is."""

from __future__ import annotations

import json
from typing import Any

import typer

from trainpool.cli._common import fail

KINDS = ("all", "machines", "tpus", "accelerators")


def catalog_command(
    kind: str = typer.Option("all", help="machines, tpus, accelerators or all."),
    name: str = typer.Option("", help="Only names containing this text."),
    gpu: bool = typer.Option(False, "--gpu", help="Only machines with GPUs built in."),
    min_gbps: float = typer.Option(0.0, help="Only machines with at least this egress."),
    accelerator: str = typer.Option(
        "", help="Where to get this accelerator (e.g. NVIDIA_H100_80GB): machines, regions, prices."
    ),
    count: int = typer.Option(0, help="With --accelerator: this many per VM (0: any)."),
    location: str = typer.Option("us-central1", help="With --accelerator: nearest regions first."),
    as_json: bool = typer.Option(False, "--json", help="Print rows as JSON."),
) -> None:
    """List what Vertex training offers, with egress, prices and sources; or where to get a GPU."""
    from trainpool import catalog
    from trainpool.catalog.listing import accelerator_rows, machine_rows, table, tpu_rows
    from trainpool.catalog.where import where_rows

    sections: list[tuple[str, list[dict[str, Any]]]] = []
    if accelerator:
        try:
            rows = where_rows(accelerator, count, location)
        except catalog.UnknownName as err:
            fail(f"--accelerator: {err}")
        if not rows:
            fail(f"--count: no machine type carries {count} x {accelerator} per VM")
        sections.append((f"{accelerator} by machine type and region", rows))
    elif kind not in KINDS:
        fail(f"--kind: {kind!r} is not accepted; accepted: {', '.join(KINDS)}")
    else:
        if kind in ("all", "machines"):
            sections.append(("machines", machine_rows(name=name, gpu_only=gpu, min_gbps=min_gbps)))
        if kind in ("all", "tpus") and not gpu:
            sections.append(("tpus", tpu_rows(name=name)))
        if kind in ("all", "accelerators"):
            sections.append(("accelerators", accelerator_rows(name=name)))
    if as_json:
        typer.echo(json.dumps(dict(sections), indent=2))
        return
    for title, rows in sections:
        typer.echo(f"{title} ({len(rows)})")
        typer.echo(table(rows))


def register(app: typer.Typer) -> None:
    app.command("catalog")(catalog_command)
