"""A saved page copy: ``# key: value`` header lines, then one ``| a | b |`` table."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PAGES = Path(__file__).parent / "pages"


@dataclass(frozen=True)
class Page:
    """The table of one saved page, with where and when it was read."""

    url: str
    read: str
    verified: bool
    rows: list[dict[str, str]]

    @property
    def source(self) -> str:
        return f"{self.url} (read {self.read})"


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def load(name: str) -> Page:
    """The page copy ``pages/NAME.txt``; a header it lacks is a KeyError naming the file."""
    header: dict[str, str] = {}
    table: list[list[str]] = []
    for line in (PAGES / f"{name}.txt").read_text("utf-8").splitlines():
        if line.startswith("# ") and ": " in line and not line.startswith("#   "):
            key, value = line[2:].split(": ", 1)
            header[key] = value
        elif line.startswith("|"):
            table.append(_cells(line))
    head, *body = table
    missing = [key for key in ("page", "read", "verified") if key not in header]
    if missing:
        raise KeyError(f"pages/{name}.txt: header lines missing: {', '.join(missing)}")
    return Page(
        url=header["page"],
        read=header["read"],
        verified=header["verified"] == "true",
        rows=[dict(zip(head, row, strict=True)) for row in body],
    )
