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
        found = compiling.check_compiled(root)
        if found.other_kfp:
            import kfp

            written = ", ".join(sorted(set(found.other_kfp.values())))
            typer.echo(
                f"{len(found.other_kfp)} compiled file(s) were written by another kfp ({written}; "
                f"this is kfp-{kfp.__version__}) and differ in nothing else: fresh",
                err=True,
            )
        if found.stale:
            fail(
                "stale compiled files (run `trainpool compile`):\n  " + "\n  ".join(found.stale),
                1,
            )
        typer.echo("compiled files are up to date")
        return
    for path in compiling.compile_all(root):
        typer.echo(f"wrote {path.relative_to(root)}")


def register(app: typer.Typer) -> None:
    app.command("compile")(compile_command)
