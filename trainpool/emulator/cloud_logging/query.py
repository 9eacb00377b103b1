"""The Logging query language, as ``ListLogEntries``' ``filter`` and ``gcloud logging read`` use it.

The grammar and rules are Cloud Logging's ("Logging query language",
https://cloud.google.com/logging/docs/view/logging-query-language):

- a query is comparisons joined by ``AND``, ``OR`` and ``NOT`` (or ``-``), with
  parentheses; ``NOT`` binds tightest, then ``OR``, then ``AND`` ("``a OR NOT b AND NOT c OR
  d`` is ``(a OR (NOT b)) AND ((NOT c) OR d)``"); comparisons side by side are joined by
  ``AND``;
- a comparison is ``FIELD OP VALUE`` with ``OP`` one of ``= != > < >= <= : =~ !~``; a field
  is a dotted path of the entry's JSON (``resource.labels.job_id``, ``jsonPayload.message``),
  a segment quoted when it has other characters (``labels."ml.googleapis.com/trial_id"``);
  a value is a quoted or bare string, or several joined by ``OR``/``AND`` in parentheses
  (``resource.type = ("ml_job" OR "gce_instance")``);
- ``:`` is "has": a substring of the field's text; ``=~``/``!~`` a regular expression
  (RE2 in Cloud Logging; Python's ``re`` here); string comparisons ignore case ("String
  comparisons aren't case sensitive");
- ``severity`` compares by rank (DEFAULT < DEBUG < INFO < NOTICE < WARNING < ERROR <
  CRITICAL < ALERT < EMERGENCY) and ``timestamp`` as a time (RFC 3339);
- a bare value alone (a "global restriction") matches an entry any of whose fields has it.

Functions (``SEARCH``, ``log_id``, ``sample``, ``ip_in_net``) are refused with
INVALID_ARGUMENT naming them: the emulator does not evaluate them. A query is at most
:data:`MAX_CHARS` characters and :data:`~.grammar.MAX_TERMS` comparisons (the emulator's
bounds; Cloud Logging's own limit on a filter is 20,000 characters).

The query's tokens and parse tree are :mod:`trainpool.emulator.cloud_logging.grammar`; here
a query is parsed and checked, and entries are tested against it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from trainpool.emulator.cloud_logging.grammar import Node, Parser, refuse

MAX_CHARS = 20_000
SEVERITIES = (
    "DEFAULT",
    "DEBUG",
    "INFO",
    "NOTICE",
    "WARNING",
    "ERROR",
    "CRITICAL",
    "ALERT",
    "EMERGENCY",
)
SEVERITY_NUMBERS = {name: index * 100 for index, name in enumerate(SEVERITIES)}
Entry = dict[str, Any]


Predicate = Callable[[Entry], bool]


def lookup(entry: Entry, path: list[str]) -> Any:
    current: Any = entry
    for part in path:
        if not isinstance(current, dict) or part not in current:
            return None
        current = current[part]
    return current


def _severity(value: str) -> int | None:
    upper = value.upper()
    if upper in SEVERITY_NUMBERS:
        return SEVERITY_NUMBERS[upper]
    return int(value) if value.isdigit() else None


def _time(value: str) -> datetime | None:
    text = value.strip().replace("Z", "+00:00")
    fraction = re.match(r"^(.*?\.\d{1,6})\d*(.*)$", text)
    if fraction:
        text = fraction.group(1) + fraction.group(2)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else None


def _compare(left: Any, right: Any, operator: str) -> bool:
    if operator == "=":
        return bool(left == right)
    if operator == "!=":
        return bool(left != right)
    if operator == ">":
        return bool(left > right)
    if operator == "<":
        return bool(left < right)
    if operator == ">=":
        return bool(left >= right)
    return bool(left <= right)


def _test(node: Node, field: Any, value: str) -> bool:
    """Whether ``field`` (the entry's value at the node's path) satisfies ``op value``."""
    operator, name = node.op, ".".join(node.path)
    if operator in ("=~", "!~"):
        try:
            return re.search(value, "" if field is None else _text(field)) is not None
        except re.error as err:
            raise refuse(f"{value!r} is not a regular expression: {err}") from None
    if field is None:
        return operator == "!="
    if operator == ":":
        return value.lower() in _text(field).lower()
    if name == "severity":
        left, right = _severity(str(field)), _severity(value)
        if left is None or right is None:
            raise refuse(f"severity {value!r}; accepted: {', '.join(SEVERITIES)}")
        return _compare(left, right, operator)
    if name in ("timestamp", "receiveTimestamp"):
        left_t, right_t = _time(str(field)), _time(value)
        if right_t is None:
            raise refuse(f"{name} {value!r}; accepted: an RFC 3339 time")
        return left_t is not None and _compare(left_t, right_t, operator)
    if isinstance(field, bool):
        return _compare(str(field).lower(), value.lower(), operator)
    if isinstance(field, (int, float)):
        try:
            return _compare(float(field), float(value), operator)
        except ValueError:
            return operator == "!="
    return _compare(_text(field).lower(), value.lower(), operator)


def matches(node: Node, entry: Entry) -> bool:
    """Whether ``entry`` (a LogEntry's JSON) satisfies query ``node``."""
    if node.kind == "AND":
        return all(matches(child, entry) for child in node.children)
    if node.kind == "OR":
        return any(matches(child, entry) for child in node.children)
    if node.kind == "NOT":
        return not matches(node.children[0], entry)
    if node.kind == "HAS":
        return node.values[0].lower() in _text(entry).lower()
    field = lookup(entry, list(node.path))
    combine = all if node.joiner == "AND" else any
    found = combine(_test(node, field, value) for value in node.values)
    return not found if node.op == "!~" else found


def required(node: Node | None, path: str) -> set[str] | None:
    """The values field ``path`` must equal for ``node`` to hold (from comparisons ANDed at
    the top), or None when the query does not pin it: a reader narrows what it reads with it."""
    if node is None:
        return None
    if node.kind == "CMP" and node.op == "=" and ".".join(node.path) == path:
        return set(node.values) if node.joiner == "OR" else None
    if node.kind == "AND":
        for child in node.children:
            found = required(child, path)
            if found is not None:
                return found
    return None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return " ".join(f"{k} {_text(v)}" for k, v in value.items())
    if isinstance(value, list):
        return " ".join(_text(v) for v in value)
    return str(value)


def parse(text: str) -> Node | None:
    """Query ``text`` parsed (None when empty: every entry matches); InputError naming what
    is wrong. Values are checked when an entry is tested against them."""
    if len(text) > MAX_CHARS:
        raise refuse(f"{len(text):,} characters; accepted: at most {MAX_CHARS:,}")
    if not text.strip():
        return None
    parser = Parser(text)
    node = parser.expression()
    extra = parser.peek()
    if extra is not None:
        raise refuse(f"unexpected {extra.text!r}")
    _check_values(node)
    return node


def _check_values(node: Node) -> None:
    """Refuse a severity or a time that cannot be compared, before any entry is read."""
    for child in node.children:
        _check_values(child)
    if node.kind != "CMP" or node.op in (":", "=~", "!~"):
        return
    name = ".".join(node.path)
    for value in node.values:
        if name == "severity" and _severity(value) is None:
            raise refuse(f"severity {value!r}; accepted: {', '.join(SEVERITIES)} or a number")
        if name in ("timestamp", "receiveTimestamp") and _time(value) is None:
            raise refuse(f"{name} {value!r}; accepted: an RFC 3339 time with its zone")
