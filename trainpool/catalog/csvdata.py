"""Reading the catalog's CSV files: rows as dicts, numbers and true/false flags."""

from __future__ import annotations

import csv
from importlib import resources


def read_rows(name: str, package: str = "trainpool.catalog") -> list[dict[str, str]]:
    """The rows of ``data/NAME`` of ``package``."""
    text = resources.files(package).joinpath("data", name).read_text("utf-8")
    return list(csv.DictReader(text.splitlines()))


def number(text: str) -> float | None:
    """A float, or None for an empty cell."""
    return float(text) if text else None


def flag(text: str) -> bool:
    """``true`` or ``false``; anything else is a ValueError."""
    if text not in ("true", "false"):
        raise ValueError(f"catalog flag {text!r} is not accepted; accepted: true, false")
    return text == "true"
