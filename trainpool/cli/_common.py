"""Small helpers shared by the CLI modules."""

from __future__ import annotations

import sys
from typing import NoReturn

import typer


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``message`` to stderr and exit with ``code`` (2: bad input, 1: failure)."""
    typer.echo(message, err=True)
    sys.exit(code)
