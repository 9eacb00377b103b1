"""List calls: the ``filter`` (the subset of AIP-160 that listings use), page tokens, SQL.

Accepted filters: conditions joined by ``AND``, each ``state=STATE`` (or ``!=``),
``display_name="NAME"`` (or ``!=``), ``labels.KEY="VALUE"`` (or ``!=``), or a field the
kind indexes (:attr:`trainpool.emulator.records.resources.Kind.indexed`), such as a
PipelineJob's ``schedule_name``. A value is quoted, or bare: letters, digits and
``_-./:@``, so the aiplatform SDK's ``PipelineJobSchedule.list_jobs()`` filter, sent
unquoted as ``schedule_name=projects/P/locations/L/schedules/ID``
(google/cloud/aiplatform/pipeline_job_schedules.py, ``list_jobs``), is understood. At most
:data:`MAX_FILTER_CHARS` characters and :data:`MAX_CONDITIONS` conditions (the emulator's
bounds: Vertex publishes none, and AIP-160 lets a service limit a filter's complexity). A
page token is the sequence number of the last resource of the previous page: digits that
fit SQLite's 64-bit integer, nothing else. A negative ``page_size`` is refused; one above
:data:`MAX_PAGE_SIZE` is read as that ("If the user specifies a page_size above the
maximum, the API should coerce it to the maximum", AIP-158). :func:`to_sql` turns the
conditions into a ``WHERE`` clause over the indexed ``state`` and ``display_name``
columns and the labels and fields tables, so a page costs the same whatever the number of stored
resources.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainpool.errors import InputError, brief

_CONDITION = re.compile(r'^\s*([a-z_]+|labels\.[\w-]+)\s*(!=|=)\s*("([^"]*)"|[\w./:@-]+)\s*$')
DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
MAX_FILTER_CHARS = 2000
MAX_CONDITIONS = 20
MAX_TOKEN_DIGITS = 18
_ACCEPTED = (
    'conditions joined by AND, each state=STATE, display_name="NAME" or labels.KEY="VALUE" '
    "(= or !=)"
)


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
    if len(text) > MAX_FILTER_CHARS:
        raise InputError.of(
            "filter",
            f"{brief(text)} has {len(text):,} characters; accepted: at most "
            f"{MAX_FILTER_CHARS:,} characters of {_ACCEPTED}",
        )
    parts = re.split(r"\s+AND\s+", text.strip())
    if len(parts) > MAX_CONDITIONS:
        raise InputError.of(
            "filter",
            f"{brief(text)} has {len(parts):,} conditions; accepted: at most {MAX_CONDITIONS} "
            f"{_ACCEPTED}",
        )
    known = ("state", "display_name", *indexed)
    conditions = []
    for part in parts:
        match = _CONDITION.fullmatch(part)
        if match is None or not (match.group(1) in known or match.group(1).startswith("labels.")):
            raise InputError.of(
                "filter",
                f"{brief(part)} in {brief(text)} is not understood; accepted: {_ACCEPTED}"
                + "".join(f', or {name}="VALUE"' for name in indexed),
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
    """The page size to use: the default for 0, at most :data:`MAX_PAGE_SIZE`."""
    if requested < 0:
        raise InputError.of(
            "page_size", f"{requested} is negative; accepted: 0 (the default) or more"
        )
    return min(int(requested or DEFAULT_PAGE_SIZE), MAX_PAGE_SIZE)


def page_after(token: str) -> int:
    """The sequence number a page token names (0 for the first page)."""
    if not token:
        return 0
    if not re.fullmatch(rf"[0-9]{{1,{MAX_TOKEN_DIGITS}}}", token):
        raise InputError.of(
            "page_token",
            f"{brief(token)} is not a token this server gave; "
            "accepted: the next_page_token of the previous page",
        )
    return int(token)
