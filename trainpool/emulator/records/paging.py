"""List calls: the ``filter`` (the subset of AIP-160 that listings use), ``order_by``, page
tokens, SQL.

Accepted filters: conditions joined by ``AND`` (each a condition or several joined by
``OR``, which binds tighter, as AIP-160 has it), each ``state=STATE`` (or ``!=``),
``display_name="NAME"`` (``=``, ``!=``, or ``:`` with ``*`` wildcards), ``labels.KEY="VALUE"``
(``=``, ``!=``; ``labels.KEY:*``: the key is present), or a field the kind indexes
(:attr:`trainpool.emulator.records.kinds.Kind.indexed`), such as a PipelineJob's
``schedule_name`` or ``pipeline_name`` (``=``, ``!=``, ``:``), or one of its times
(:attr:`~trainpool.emulator.records.kinds.Kind.times`: ``=``, ``!=``, ``<``, ``>``,
``<=``, ``>=`` with an RFC 3339 value), as ListPipelineJobsRequest.filter documents them
(aiplatform v1 ``pipeline_service.proto``). A value is quoted, or bare: letters, digits and
``_-./:@*+``, so the aiplatform SDK's ``PipelineJobSchedule.list_jobs()`` filter, sent
unquoted as ``schedule_name=projects/P/locations/L/schedules/ID``
(google/cloud/aiplatform/pipeline_job_schedules.py, ``list_jobs``), and the notebooks'
``display_name=NAME`` are understood. At most :data:`MAX_FILTER_CHARS` characters and
:data:`MAX_CONDITIONS` conditions (the emulator's bounds: Vertex publishes none, and
AIP-160 lets a service limit a filter's complexity). ``order_by`` is a comma-separated list
of the kind's times (and ``display_name``), each optionally followed by ``desc``.

A page token is, in creation order, the sequence number of the last resource of the
previous page, and under an order (``order_by``, or a kind's default order: a PipelineJob
list is newest first, "if order_by is not specified, it will order by default order is
create time in descending order") how many resources came before: digits that fit
SQLite's 64-bit integer, nothing else. A negative ``page_size`` is refused; one above
:data:`MAX_PAGE_SIZE` is read as that ("If the user specifies a page_size above the
maximum, the API should coerce it to the maximum", AIP-158). :func:`to_sql` turns the
conditions into a ``WHERE`` clause over the indexed ``state`` and ``display_name`` columns
and the labels and fields tables, so a page in creation order costs the same whatever the
number of stored resources.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainpool.errors import InputError, brief

_CONDITION = re.compile(
    r'^\s*([a-z_]+(?:\.[\w-]+)?)\s*(!=|<=|>=|=|<|>|:)\s*("([^"]*)"|[\w./:@*+-]+)\s*$'
)
_ORDER = re.compile(r"^\s*([a-z_]+)(?:\s+(desc|asc))?\s*$")
DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
MAX_FILTER_CHARS = 2000
MAX_CONDITIONS = 20
MAX_TOKEN_DIGITS = 18
_ACCEPTED = (
    'conditions joined by AND (or OR), each state=STATE, display_name="NAME" or '
    'labels.KEY="VALUE" (= or !=)'
)


@dataclass(frozen=True)
class Condition:
    field: str
    op: str
    value: str

    @property
    def negate(self) -> bool:
        return self.op == "!="


def _normal_time(text: str, where: str) -> str:
    """An RFC 3339 time as the fields table keeps times (:func:`time_text`)."""
    from trainpool.emulator.clock import parse_time

    try:
        return time_text(parse_time(text))
    except ValueError as err:
        raise InputError.of("filter", f"{where}: {err}") from None


def time_text(moment: Any) -> str:
    """A timestamp as the fields table keeps it: UTC, microseconds, ``Z`` (these sort as the
    times do)."""
    from datetime import timezone

    return str(moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


def _condition(part: str, text: str, indexed: tuple[str, ...], times: tuple[str, ...]) -> Condition:
    match = _CONDITION.fullmatch(part)
    name = match.group(1) if match else ""
    op = match.group(2) if match else ""
    value = (
        "" if match is None else (match.group(4) if match.group(4) is not None else match.group(3))
    )
    ops = {"=", "!="}
    if name in times:
        ops |= {"<", ">", "<=", ">="}
    elif name == "display_name" or name in indexed or name.startswith("labels."):
        ops |= {":"}
    known = name in ("state", "display_name", *indexed, *times) or name.startswith("labels.")
    if (
        match is None
        or not known
        or op not in ops
        or (name.startswith("labels.") and op == ":" and value != "*")
    ):
        raise InputError.of(
            "filter",
            f"{brief(part)} in {brief(text)} is not understood; accepted: {_ACCEPTED}"
            + "".join(f', or {field}="VALUE"' for field in indexed)
            + "".join(f', or {field}>"RFC 3339 TIME" (=, !=, <, >, <=, >=)' for field in times),
        )
    if name in times:
        value = _normal_time(value, brief(part))
    return Condition(name, op, value)


def parse_filter(
    text: str, indexed: tuple[str, ...] = (), times: tuple[str, ...] = ()
) -> list[list[Condition]]:
    """The conditions of ``text``, all of which must hold, each a list of alternatives
    (``OR``); ``indexed`` and ``times`` are the kind's other filterable fields.
    :class:`InputError` names the part that is not understood."""
    if not text.strip():
        return []
    if len(text) > MAX_FILTER_CHARS:
        raise InputError.of(
            "filter",
            f"{brief(text)} has {len(text):,} characters; accepted: at most "
            f"{MAX_FILTER_CHARS:,} characters of {_ACCEPTED}",
        )
    groups = [re.split(r"\s+OR\s+", part) for part in re.split(r"\s+AND\s+", text.strip())]
    count = sum(len(group) for group in groups)
    if count > MAX_CONDITIONS:
        raise InputError.of(
            "filter",
            f"{brief(text)} has {count:,} conditions; accepted: at most {MAX_CONDITIONS} "
            f"{_ACCEPTED}",
        )
    return [[_condition(part, text, indexed, times) for part in group] for group in groups]


def parse_order(text: str, orderable: tuple[str, ...]) -> list[tuple[str, bool]]:
    """``order_by`` as ``(field, descending)`` pairs; :class:`InputError` naming a field
    that cannot order."""
    order = []
    for part in text.split(","):
        match = _ORDER.fullmatch(part)
        if match is None or match.group(1) not in orderable:
            raise InputError.of(
                "order_by",
                f"{brief(part.strip())} in {brief(text)} is not understood; accepted: a "
                f"comma-separated list of {', '.join(orderable)}, each optionally followed "
                "by desc",
            )
        order.append((match.group(1), match.group(2) == "desc"))
    return order


def _sql(
    c: Condition, table: str, labels: str, state_value: Callable[[str], int], fields: str
) -> tuple[str, list[Any]]:
    op = {":": "GLOB"}.get(c.op, c.op)
    if c.field == "state":
        return f"{table}.state {op} ?", [state_value(c.value)]
    if c.field == "display_name":
        return f"{table}.display_name {op} ?", [c.value]
    rows, column, key = (
        (labels, "key", c.field.split(".", 1)[1])
        if c.field.startswith("labels.")
        else (fields, "field", c.field)
    )
    if c.field.startswith("labels.") and c.op == ":":  # labels.KEY:* - the key is present
        return f"{table}.name IN (SELECT name FROM {rows} WHERE {column} = ?)", [key]
    if c.value and c.op in ("=", ":"):
        return (
            f"{table}.name IN (SELECT name FROM {rows} WHERE {column} = ? AND value {op} ?)",
            [key, c.value],
        )
    # a missing label or field reads as ""
    return (
        f"COALESCE((SELECT value FROM {rows} l WHERE l.name = {table}.name "
        f"AND l.{column} = ?), '') {op} ?",
        [key, c.value],
    )


def to_sql(
    conditions: list[list[Condition]],
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
    for group in conditions:
        parts = [_sql(c, table, labels, state_value, fields) for c in group]
        sql += " AND (" + " OR ".join(part for part, _ in parts) + ")"
        for _, values in parts:
            params += values
    return sql, params


def order_sql(order: list[tuple[str, bool]], table: str, fields: str = "resource_fields") -> str:
    """``ORDER BY`` terms for ``order`` (ties in creation order, the same way round)."""
    terms = []
    for field, descending in order:
        column = (
            f"{table}.display_name"
            if field == "display_name"
            else f"COALESCE((SELECT value FROM {fields} o WHERE o.name = {table}.name "
            f"AND o.field = '{field}'), '')"
        )
        terms.append(f"{column} {'DESC' if descending else 'ASC'}")
    last = order[-1][1] if order else False
    terms.append(f"{table}.seq {'DESC' if last else 'ASC'}")
    return ", ".join(terms)


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
