"""The ``trainpool`` command (``trainpool.cli.commands``), installed with the ``cli`` extra.

``main`` says which extra to install when a command needs a package the install lacks,
instead of a bare ModuleNotFoundError.
"""

from __future__ import annotations

import sys
from typing import Any

EXTRAS = {"typer": "cli", "rich": "cli", "click": "cli", "optuna": "emulator"}


def missing_extra_message(err: ModuleNotFoundError) -> str | None:
    """What to install for ``err``, or None when it is not a missing extra."""
    top = (err.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    return (
        f"trainpool: this command needs {top!r}, which comes with the {extra!r} extra; "
        f"install it with: pip install 'trainpool[{extra}]' (or 'trainpool[local]' for "
        "everything a local run needs)"
    )


def main() -> None:
    """Run the ``trainpool`` command."""
    try:
        from trainpool.cli.commands import app

        app()
    except ModuleNotFoundError as err:
        message = missing_extra_message(err)
        if message is None:
            raise
        print(message, file=sys.stderr)
        sys.exit(2)


def __getattr__(name: str) -> Any:
    if name == "app":
        from trainpool.cli.commands import app

        return app
    raise AttributeError(name)
