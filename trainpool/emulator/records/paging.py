"""List calls: the ``filter`` (the subset of AIP-160 that listings use), page tokens, SQL.

Accepted filters: conditions joined by ``AND``, each ``state=STATE`` (or ``!=``),
``display_name="NAME"`` (or ``!=``), ``labels.KEY="VALUE"`` (or ``!=``), or a field the
kind indexes (:attr:`trainpool.emulator.records.resources.Kind.indexed`), such as a
PipelineJob's ``schedule_name``. A value is quoted, or bare: letters, digits and
``_-./:@``, so the aiplatform SDK's ``PipelineJobSchedule.list_jobs()`` filter, sent
unquoted as ``schedule_name=projects/P/locations/L/schedules/ID``
(google/cloud/aiplatform/pipeline_job_schedules.py, ``list_jobs``), is understood. A page
token is the sequence number of the last resource of the previous page. :func:`to_sql`
turns the conditions into a ``WHERE`` clause over the indexed ``state`` and
``display_name`` columns and the labels and fields tables, so a page costs the same
whatever the number of stored resources.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainpool.errors import InputError

_CONDITION = re.compile(r'^\s*([a-z_]+|labels\.[\w-]+)\s*(!=|=)\s*("([^"]*)"|[\w./:@-]+)\s*$')
DEFAULT_PAGE_SIZE = 100


@dataclass(frozen=True)
class Condition:
    field: str
    negate: bool
    value: str


def parse_filter(text: str, indexed: tuple[str, ...] = ()) -> list[Condition]:
    """The conditions of ``text`` (``indexed``: the kind's other filterable fields);
    :class:`InputError` naming the part that is not understood."""
    if not text.strip():
        return []
    known = ("state", "display_name", *indexed)
    conditions = []
    for part in re.split(r"\s+AND\s+", text.strip()):
        match = _CONDITION.match(part)
        if match is None or not (match.group(1) in known or match.group(1).startswith("labels.")):
            others = "".join(f', {name}="VALUE"' for name in indexed)
            raise InputError.of(
                "filter",
                f"{part!r} in {text!r} is not understood; accepted: conditions joined by "
                f'AND, each state=STATE, display_name="NAME", labels.KEY="VALUE"{others} '
                "(= or !=)",
            )
        value = match.group(4) if match.group(4) is not None else match.group(3)
        conditions.append(Condition(match.group(1), match.group(2) == "!=", value))
    return conditions


def to_sql(
    conditions: list[Condition],
    table: str,
    labels: str,
    state_value: Callable[[str], int],
    fields: str = "resource_fields",
) -> tuple[str, list[Any]]:
    """`` AND ...`` SQL (and its parameters) selecting the rows of ``table`` that match;
    ``labels`` is the ``(name, key, value)`` table of their labels, ``fields`` the
    ``(name, field, value)`` table of their indexed fields.

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
            rows, column, key = (
                (labels, "key", c.field.split(".", 1)[1])
                if c.field.startswith("labels.")
                else (fields, "field", c.field)
            )
            if c.value and not c.negate:
                sql += (
                    f" AND {table}.name IN "
                    f"(SELECT name FROM {rows} WHERE {column} = ? AND value = ?)"
                )
            else:  # a missing label or field reads as ""
                sql += (
                    f" AND COALESCE((SELECT value FROM {rows} l WHERE l.name = {table}.name "
                    f"AND l.{column} = ?), '') {op} ?"
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
