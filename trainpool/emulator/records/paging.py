"""List calls: the ``filter`` (the subset of AIP-160 that listings use), page tokens, SQL.

Accepted filters: conditions joined by ``AND``, each ``state=STATE`` (or ``!=``),
``display_name="NAME"`` (or ``!=``), or ``labels.KEY="VALUE"`` (or ``!=``). A page token
is the sequence number of the last resource of the previous page. :func:`to_sql` turns the
conditions into a ``WHERE`` clause over the indexed ``state`` and ``display_name``
columns and the labels table, so a page costs the same whatever the number of stored
resources.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainpool.errors import InputError

_CONDITION = re.compile(
    r'^\s*(state|display_name|labels\.[\w-]+)\s*(!=|=)\s*("([^"]*)"|[\w-]+)\s*$'
)
DEFAULT_PAGE_SIZE = 100


@dataclass(frozen=True)
class Condition:
    field: str
    negate: bool
    value: str


def parse_filter(text: str) -> list[Condition]:
    """The conditions of ``text``; :class:`InputError` naming the part that is not understood."""
    if not text.strip():
        return []
    conditions = []
    for part in re.split(r"\s+AND\s+", text.strip()):
        match = _CONDITION.match(part)
        if match is None:
            raise InputError.of(
                "filter",
                f"{part!r} in {text!r} is not understood; accepted: conditions joined by "
                'AND, each state=STATE, display_name="NAME" or labels.KEY="VALUE" (= or !=)',
            )
        value = match.group(4) if match.group(4) is not None else match.group(3)
        conditions.append(Condition(match.group(1), match.group(2) == "!=", value))
    return conditions


def to_sql(
    conditions: list[Condition], table: str, labels: str, state_value: Callable[[str], int]
) -> tuple[str, list[Any]]:
    """`` AND ...`` SQL (and its parameters) selecting the rows of ``table`` that match;
    ``labels`` is the ``(name, key, value)`` table of their labels.

    ``state_value`` maps a state name to the integer stored in ``state`` (-1: none).
    """
    sql = ""
    params: list[Any] = []
    for c in conditions:
        op = "!=" if c.negate else "="
        if c.field == "state":
            sql += f" AND {table}.state {op} ?"
            params.append(state_value(c.value))
        elif c.field == "display_name":
            sql += f" AND {table}.display_name {op} ?"
            params.append(c.value)
        else:
            key = c.field.split(".", 1)[1]
            if c.value and not c.negate:
                sql += (
                    f" AND {table}.name IN (SELECT name FROM {labels} WHERE key = ? AND value = ?)"
                )
            else:  # a missing label reads as ""
                sql += (
                    f" AND COALESCE((SELECT value FROM {labels} l WHERE l.name = {table}.name "
                    f"AND l.key = ?), '') {op} ?"
                )
            params += [key, c.value]
    return sql, params


def page_size(requested: int) -> int:
    return int(requested or DEFAULT_PAGE_SIZE)


def page_after(token: str) -> int:
    """The sequence number a page token names (0 for the first page)."""
    try:
        return int(token or 0)
    except ValueError as err:
        raise InputError.of(
            "page_token",
            f"{token!r} is not a token this server gave; "
            "accepted: the next_page_token of the previous page",
        ) from err
