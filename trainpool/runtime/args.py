"""Hyperparameter arguments as Vertex passes them: ``--name=value`` or ``--name value``.

Vertex appends one argument per study parameter; integer and discrete values may
arrive in float form (``--batch_size=256.0``).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any


def whole_int(text: str) -> int:
    """``"256"`` or ``"256.0"`` → 256; anything else is an argparse error naming the value."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if value != value or value != int(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (e.g. 64 or 64.0)")
    return int(value)


def boolean(text: str) -> bool:
    """``true/false``, ``1/0``, ``yes/no`` (any case) → bool."""
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean; accepted: true/false, 1/0")


def _kind(default: Any) -> Any:
    if isinstance(default, bool):
        return boolean
    if isinstance(default, int):
        return whole_int
    return type(default)


def parse_hyperparameters(
    defaults: Mapping[str, Any],
    argv: Sequence[str] | None = None,
    description: str = "",
) -> dict[str, Any]:
    """Parse ``argv`` into a dict typed after ``defaults`` (name → default value).

    ``--batch_size`` and ``--batch-size`` both work; unknown arguments are an error.
    """
    parser = argparse.ArgumentParser(description=description)
    for name, default in defaults.items():
        flags = sorted({f"--{name}", f"--{name.replace('_', '-')}"})
        parser.add_argument(*flags, dest=name, type=_kind(default), default=default)
    return vars(parser.parse_args(argv))
