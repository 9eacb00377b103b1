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
:data:`MAX_CHARS` characters and :data:`MAX_TERMS` comparisons (the emulator's bounds; Cloud
Logging's own limit on a filter is 20,000 characters).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainpool.errors import InputError

MAX_CHARS = 20_000
MAX_TERMS = 200
MAX_DEPTH = 32
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
_OPERATORS = ("=~", "!~", ">=", "<=", "!=", "=", ">", "<", ":")
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<op>=~|!~|>=|<=|!=|=|>|<|:)
      | (?P<paren>[()])
      | (?P<minus>-(?=[\w"(]))
      | (?P<word>[^\s()"=!<>:]+(?:"(?:[^"\\]|\\.)*"[^\s()"=!<>:]*)*)
    )""",
    re.VERBOSE,
)
Entry = dict[str, Any]


def _refuse(message: str) -> InputError:
    return InputError.of("filter", message)


@dataclass(frozen=True)
class Token:
    kind: str
    text: str


def tokens(text: str) -> list[Token]:
    out: list[Token] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        found = _TOKEN.match(text, position)
        if found is None or found.end() == position:
            raise _refuse(f"cannot read the query at {text[position : position + 20]!r}")
        kind = found.lastgroup or ""
        out.append(Token(kind, found.group(kind)))
        position = found.end()
    return out


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


Predicate = Callable[[Entry], bool]


@dataclass(frozen=True)
class Node:
    """A parsed query: ``kind`` AND, OR, NOT (``children``), CMP (``path``, ``op``,
    ``values``, ``joiner``) or HAS (a global restriction: ``values[0]``)."""

    kind: str
    children: tuple[Node, ...] = ()
    path: tuple[str, ...] = ()
    op: str = ""
    values: tuple[str, ...] = ()
    joiner: str = "OR"


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = tokens(text)
        self.at = 0
        self.terms = 0
        self.depth = 0

    def peek(self) -> Token | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> Token:
        token = self.peek()
        if token is None:
            raise _refuse("the query ends too soon")
        self.at += 1
        return token

    @staticmethod
    def _is_word(token: Token | None, word: str) -> bool:
        return token is not None and token.kind == "word" and token.text == word

    def expression(self) -> Node:
        """AND of OR-terms; comparisons side by side are ANDed."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _refuse(f"parentheses nested deeper than {MAX_DEPTH}")
        parts = [self.disjunction()]
        while True:
            token = self.peek()
            if token is None or (token.kind == "paren" and token.text == ")"):
                break
            if self._is_word(token, "AND"):
                self.take()
            parts.append(self.disjunction())
        self.depth -= 1
        return parts[0] if len(parts) == 1 else Node("AND", tuple(parts))

    def disjunction(self) -> Node:
        parts = [self.negation()]
        while self._is_word(self.peek(), "OR"):
            self.take()
            parts.append(self.negation())
        return parts[0] if len(parts) == 1 else Node("OR", tuple(parts))

    def negation(self) -> Node:
        token = self.peek()
        if self._is_word(token, "NOT") or (token is not None and token.kind == "minus"):
            self.take()
            return Node("NOT", (self.negation(),))
        return self.primary()

    def primary(self) -> Node:
        token = self.take()
        if token.kind == "paren" and token.text == "(":
            inner = self.expression()
            if self.take().text != ")":
                raise _refuse("a parenthesis is not closed")
            return inner
        if token.kind not in ("word", "string"):
            raise _refuse(f"{token.text!r} where a field or a value belongs")
        following = self.peek()
        if (
            token.kind == "word"
            and following is not None
            and following.kind == "paren"
            and following.text == "("
        ):
            raise _refuse(
                f"the function {token.text}() is not evaluated by the emulator; accepted: "
                "comparisons (FIELD OP VALUE) joined by AND, OR, NOT"
            )
        self.terms += 1
        if self.terms > MAX_TERMS:
            raise _refuse(f"more than {MAX_TERMS} comparisons")
        if following is not None and following.kind == "op":
            if token.kind != "word":
                raise _refuse(f"{token.text} is not a field name")
            operator = self.take().text
            values, joiner = self.values()
            return Node(
                "CMP",
                path=tuple(_field_path(token.text)),
                op=operator,
                values=values,
                joiner=joiner,
            )
        text = _unquote(token.text) if token.kind == "string" else token.text
        return Node("HAS", values=(text,))

    def values(self) -> tuple[tuple[str, ...], str]:
        """A value, or values joined by OR (or AND) in parentheses."""
        token = self.take()
        if token.kind == "paren" and token.text == "(":
            items: list[str] = []
            joiner = "OR"
            while True:
                item = self.take()
                if item.kind == "paren" and item.text == ")":
                    break
                if self._is_word(item, "OR") or self._is_word(item, "AND"):
                    joiner = item.text
                    continue
                if item.kind not in ("word", "string"):
                    raise _refuse(f"{item.text!r} inside a list of values")
                items.append(_unquote(item.text) if item.kind == "string" else item.text)
            if not items:
                raise _refuse("an empty list of values")
            return tuple(items), joiner
        if token.kind not in ("word", "string"):
            raise _refuse(f"{token.text!r} where a value belongs")
        return (_unquote(token.text) if token.kind == "string" else token.text,), "OR"


def _field_path(text: str) -> list[str]:
    parts: list[str] = []
    for match in re.finditer(r'"((?:[^"\\]|\\.)*)"|([^."]+)', text):
        parts.append(match.group(1) if match.group(1) is not None else match.group(2))
    return parts


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
            raise _refuse(f"{value!r} is not a regular expression: {err}") from None
    if field is None:
        return operator == "!="
    if operator == ":":
        return value.lower() in _text(field).lower()
    if name == "severity":
        left, right = _severity(str(field)), _severity(value)
        if left is None or right is None:
            raise _refuse(f"severity {value!r}; accepted: {', '.join(SEVERITIES)}")
        return _compare(left, right, operator)
    if name in ("timestamp", "receiveTimestamp"):
        left_t, right_t = _time(str(field)), _time(value)
        if right_t is None:
            raise _refuse(f"{name} {value!r}; accepted: an RFC 3339 time")
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
        raise _refuse(f"{len(text):,} characters; accepted: at most {MAX_CHARS:,}")
    if not text.strip():
        return None
    parser = _Parser(text)
    node = parser.expression()
    extra = parser.peek()
    if extra is not None:
        raise _refuse(f"unexpected {extra.text!r}")
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
            raise _refuse(f"severity {value!r}; accepted: {', '.join(SEVERITIES)} or a number")
        if name in ("timestamp", "receiveTimestamp") and _time(value) is None:
            raise _refuse(f"{name} {value!r}; accepted: an RFC 3339 time with its zone")
