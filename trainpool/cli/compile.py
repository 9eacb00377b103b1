"""``trainpool compile [--check]``."""

from __future__ import annotations

import typer

from trainpool.cli._common import fail


def compile_command(
    check: bool = typer.Option(
        False, "--check", help="Write nothing; exit 1 and name the stale files if any differ."
    ),
) -> None:
    """Compile every component into component_specs/ and every pipeline into pipelines/."""
    from trainpool import compiling

    try:
        root = compiling.project_root()
    except FileNotFoundError as err:
        fail(str(err))
    if check:
        stale = compiling.stale_files(root)
        if stale:
            fail("stale compiled files (run `trainpool compile`):\n  " + "\n  ".join(stale), 1)
        typer.echo("compiled files are up to date")
        return
    for path in compiling.compile_all(root):
        typer.echo(f"wrote {path.relative_to(root)}")


def register(app: typer.Typer) -> None:
    app.command("compile")(compile_command)
