"""The docs site's generated pages are what the code says: the CLI from the commands
themselves, the components from their signatures and docstrings."""

from __future__ import annotations

import pytest

from trainpool.cli import reference


@pytest.mark.parametrize("name", sorted(reference.PAGES))
def test_a_generated_reference_page_is_current(name: str) -> None:
    path = reference.PAGES[name]
    assert path.read_text(encoding="utf-8") == reference.pages()[name], (
        f"{path} is stale: run python3 -m trainpool.cli.reference"
    )


def test_every_command_is_in_the_cli_reference() -> None:
    import typer.main

    from trainpool.cli import app

    page = reference.PAGES["cli"].read_text(encoding="utf-8")
    for name, command in typer.main.get_command(app).commands.items():
        subcommands = getattr(command, "commands", None) or {"": command}
        for sub in subcommands:
            assert f"### `trainpool {name}{' ' + sub if sub else ''}`" in page
