"""List calls: the ``filter`` (the subset of AIP-160 that listings use) and paging.

Accepted filters: conditions joined by ``AND``, each ``state=JOB_STATE_X`` (or ``!=``),
``display_name="NAME"`` (or ``!=``), or ``labels.KEY="VALUE"``. A page token is the
sequence number of the last resource of the previous page.

:func:`paginate` filters resources in Python (small tables); :func:`to_sql` turns the
conditions into a ``WHERE`` clause over indexed columns (``state``, ``display_name``)
and a ``<table>_labels (name, key, value)`` table, so a page costs the same whatever the
number of stored resources.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from trainpool.emulator.rpc import invalid

_CONDITION = re.compile(
    r'^\s*(state|display_name|labels\.[\w-]+)\s*(!=|=)\s*("([^"]*)"|[\w-]+)\s*$'
)


DEFAULT_PAGE_SIZE = 100
T = TypeVar("T")


@dataclass(frozen=True)
class Condition:
    field: str
    negate: bool
    value: str


def parse_filter(text: str) -> list[Condition]:
    """The conditions of ``text``; INVALID_ARGUMENT naming the part that is not understood."""
    if not text.strip():
        return []
    conditions = []
    for part in re.split(r"\s+AND\s+", text.strip()):
        match = _CONDITION.match(part)
        if match is None:
            raise invalid(
                f"filter: {part!r} in {text!r} is not understood; accepted: conditions joined by "
                'AND, each state=JOB_STATE_X, display_name="NAME" or labels.KEY="VALUE" '
                "(= or !=)"
            )
        value = match.group(4) if match.group(4) is not None else match.group(3)
        conditions.append(Condition(match.group(1), match.group(2) == "!=", value))
    return conditions


def _value(job: Any, field: str) -> str:
    if field == "state":
        return str(job.state.name)
    if field == "display_name":
        return str(job.display_name)
    return str(job.labels.get(field.split(".", 1)[1], ""))


def matches(job: Any, conditions: list[Condition]) -> bool:
    return all((_value(job, c.field) == c.value) != c.negate for c in conditions)


def to_sql(
    conditions: list[Condition], table: str, state_value: Callable[[str], int]
) -> tuple[str, list[Any]]:
    """`` AND ...`` SQL (and its parameters) selecting the rows of ``table`` that match.

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
            labels = f"{table}_labels"
            if c.value and not c.negate:
                sql += f" AND {table}.name IN "
                sql += f"(SELECT name FROM {labels} WHERE key = ? AND value = ?)"
            else:  # a missing label reads as "", as in matches()
                sql += (
                    f" AND COALESCE((SELECT value FROM {labels} l WHERE l.name = {table}.name "
                    f"AND l.key = ?), '') {op} ?"
                )
            params += [key, c.value]
    return sql, params


def page_size(request: Any) -> int:
    return int(request.page_size or DEFAULT_PAGE_SIZE)


def page_after(token: str) -> int:
    """The sequence number a page token names (0 for the first page)."""
    try:
        return int(token or 0)
    except ValueError as err:
        raise invalid(
            f"page_token: {token!r} is not a token this server gave; "
            "accepted: the next_page_token of the previous page"
        ) from err


def paginate(rows: list[tuple[int, T]], request: Any) -> tuple[list[T], str]:
    """``request``'s page of ``(sequence, resource)`` rows (those after its token) that
    match its filter, and the next page token ("" on the last page)."""
    conditions = parse_filter(request.filter)
    found = [(seq, item) for seq, item in rows if matches(item, conditions)]
    size = page_size(request)
    token = str(found[size - 1][0]) if len(found) > size else ""
    return [item for _, item in found[:size]], token
