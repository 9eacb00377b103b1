"""The List filters of Vertex ML Metadata and Vertex TensorBoard: a subset of AIP-160.

What the services document (``ListArtifactsRequest.filter``, ``ListContextsRequest.filter``,
``ListExecutionsRequest.filter`` in ``google/cloud/aiplatform_v1/types/metadata_service.py``;
``ListTensorboard*Request.filter`` in ``tensorboard_service.py``), and what the aiplatform
SDK sends (``metadata/utils.py`` ``_make_filter_string``, ``uploader_utils.py``,
``metadata/metadata.py``):

- attribute comparisons ``FIELD OP VALUE`` with ``=``, ``!=``, ``<``, ``<=``, ``>``,
  ``>=`` and the HAS operator ``:``; a value quoted (``"..."``) or bare
  (``display_name = my-experiment``, ``is_default=true``, ``state = COMPLETE``); time
  fields (``create_time``, ``update_time``) compare RFC 3339 values as times;
- ``metadata.KEY.number_value`` / ``string_value`` / ``bool_value`` (a KEY with special
  characters quoted: ``metadata."field:1".number_value``);
- ``in_context("CONTEXT")`` (the Artifacts and Executions of a Context);
- ``parent_contexts:"CONTEXT"`` and ``child_contexts:"CONTEXT"`` (Contexts);
- ``AND``, ``OR``, ``NOT`` (and ``-``), parentheses; as AIP-160 says, OR binds tighter
  than AND, and terms side by side are ANDed. "Maximum nested expression depth allowed is
  5" (the same docstrings): a deeper filter is refused.

A filter is parsed once into a predicate over a :class:`Subject`, which says how to read a
resource's fields; an unknown field or a malformed filter is an
:class:`trainpool.errors.InputError` naming the filter, the part and what is accepted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainpool.emulator.clock import parse_time
from trainpool.emulator.records.paging import MAX_FILTER_CHARS
from trainpool.errors import InputError, brief

MAX_DEPTH = 5
"""Nesting of parentheses a filter may have ("Maximum nested expression depth allowed is 5")."""
TIME_FIELDS = frozenset({"create_time", "update_time"})
_TOKEN = re.compile(
    r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<op><=|>=|!=|=|<|>|:)|(?P<paren>[()])'
    r"|(?P<comma>,)|(?P<word>[A-Za-z0-9_.@/*+-]+(?:\"(?:[^\"\\]|\\.)*\"[A-Za-z0-9_.]*)*))"
)

Predicate = Callable[[Any], bool]


@dataclass(frozen=True)
class Filter:
    """A parsed filter: ``matches(resource)``, and ``required``: the ``(function,
    argument)`` calls every match must satisfy (ANDed at the top), so a caller may read
    only what they select (a Context's members for ``in_context``)."""

    matches: Predicate
    required: frozenset[tuple[str, str]] = frozenset()

    def __call__(self, resource: Any) -> bool:
        return self.matches(resource)


@dataclass(frozen=True)
class Subject:
    """How a filter reads one kind of resource: ``fields`` names what ``field(resource,
    name)`` answers; ``functions`` the functions it takes (``in_context``), each a
    ``function(argument) -> predicate``; ``has`` the list fields of the HAS operator
    (``parent_contexts``), each ``has(value) -> predicate``."""

    fields: frozenset[str]
    field: Callable[[Any, str], Any]
    functions: dict[str, Callable[[str], Predicate]]
    has: dict[str, Callable[[str], Predicate]]
    metadata: Callable[[Any], dict[str, Any]] | None = None

    def accepted(self) -> str:
        parts = sorted(f"{f} = VALUE" for f in self.fields)
        if self.metadata is not None:
            parts.append("metadata.KEY.number_value|string_value|bool_value = VALUE")
        parts += [f'{name}("NAME")' for name in sorted(self.functions)]
        parts += [f'{name}:"NAME"' for name in sorted(self.has)]
        return ", ".join(parts) + ", joined by AND / OR, NOT, parentheses"


def parse(text: str, subject: Subject) -> Filter:
    """Filter ``text`` parsed (everything matches an empty one)."""
    if not text.strip():
        return Filter(lambda _resource: True)
    if len(text) > MAX_FILTER_CHARS:
        raise _error(text, f"has {len(text):,} characters, more than {MAX_FILTER_CHARS:,}", subject)
    tokens = _tokenize(text, subject)
    parser = _Parser(tokens, text, subject)
    found = parser.expression(0)
    if parser.position != len(tokens):
        raise _error(text, f"{brief(tokens[parser.position][1])} is not understood here", subject)
    return found


def _error(text: str, why: str, subject: Subject) -> InputError:
    return InputError.of("filter", f"{brief(text, 200)}: {why}; accepted: {subject.accepted()}")


def _tokenize(text: str, subject: Subject) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise _error(
                text, f"{brief(text[position : position + 20])} is not understood", subject
            )
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


def _unquote(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value[1:-1])


class _Parser:
    """AIP-160's grammar: expression = sequence {AND sequence}; sequence = factor
    {factor}; factor = term {OR term}; term = [NOT|-] (restriction | '(' expression ')')."""

    def __init__(self, tokens: list[tuple[str, str]], text: str, subject: Subject) -> None:
        self.tokens = tokens
        self.text = text
        self.subject = subject
        self.position = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise _error(self.text, "ends too soon", self.subject)
        self.position += 1
        return token

    def _is_word(self, word: str) -> bool:
        token = self.peek()
        return token is not None and token == ("word", word)

    def expression(self, depth: int) -> Filter:
        if depth > MAX_DEPTH:
            raise _error(self.text, f"nests deeper than {MAX_DEPTH} levels", self.subject)
        parts = [self.sequence(depth)]
        while self._is_word("AND"):
            self.take()
            parts.append(self.sequence(depth))
        return _all(parts)

    def sequence(self, depth: int) -> Filter:
        parts = [self.factor(depth)]
        while True:
            token = self.peek()
            if token is None or token[0] == "paren" and token[1] == ")" or self._is_word("AND"):
                return _all(parts)
            parts.append(self.factor(depth))

    def factor(self, depth: int) -> Filter:
        parts = [self.term(depth)]
        while self._is_word("OR"):
            self.take()
            parts.append(self.term(depth))
        return _any(parts)

    def term(self, depth: int) -> Filter:
        token = self.peek()
        if self._is_word("NOT") or token == ("word", "-"):
            self.take()
            inner = self.term(depth)
            return Filter(lambda resource: not inner(resource))
        if token == ("paren", "("):
            self.take()
            inner = self.expression(depth + 1)
            if self.take() != ("paren", ")"):
                raise _error(self.text, "a parenthesis is not closed", self.subject)
            return inner
        return self.restriction()

    def restriction(self) -> Filter:
        kind, name = self.take()
        if kind != "word":
            raise _error(self.text, f"{brief(name)} is not a field or function", self.subject)
        if name in self.subject.functions:
            argument = self._argument(name)
            return Filter(self.subject.functions[name](argument), frozenset({(name, argument)}))
        comparator = self.take()
        if comparator[0] != "op":
            raise _error(self.text, f"{brief(name)} has no comparison", self.subject)
        op = comparator[1]
        if op == ":" and name in self.subject.has:
            return _any([Filter(self.subject.has[name](v)) for v in self._values()])
        value_kind, raw = self.take()
        if value_kind not in ("word", "string"):
            raise _error(self.text, f"{brief(name)} {op} has no value", self.subject)
        value = _unquote(raw) if value_kind == "string" else raw
        if name.startswith("metadata.") and self.subject.metadata is not None:
            return Filter(self._metadata(name, op, value))
        if name not in self.subject.fields:
            raise _error(
                self.text, f"{brief(name)} is not a field this list filters on", self.subject
            )
        return Filter(
            _compare(lambda resource: self.subject.field(resource, name), op, value, name)
        )

    def _values(self) -> list[str]:
        values = []
        while True:
            kind, raw = self.take()
            if kind not in ("word", "string"):
                raise _error(self.text, f"{brief(raw)} is not a resource name", self.subject)
            values.append(_unquote(raw) if kind == "string" else raw)
            if self.peek() != ("comma", ","):
                return values
            self.take()

    def _argument(self, name: str) -> str:
        if self.take() != ("paren", "("):
            raise _error(self.text, f'{name} takes one argument: {name}("NAME")', self.subject)
        kind, raw = self.take()
        if kind not in ("string", "word") or self.take() != ("paren", ")"):
            raise _error(self.text, f'{name} takes one argument: {name}("NAME")', self.subject)
        return _unquote(raw) if kind == "string" else raw

    def _metadata(self, name: str, op: str, value: str) -> Predicate:
        match = re.fullmatch(
            r'metadata\.("(?:[^"\\]|\\.)*"|[^."]+)(?:\.(number_value|string_value|bool_value))?',
            name,
        )
        if match is None:
            raise _error(
                self.text,
                f"{brief(name)} is not metadata.KEY.number_value|string_value|bool_value",
                self.subject,
            )
        key = match.group(1)
        key = _unquote(key) if key.startswith('"') else key
        typed = match.group(2) or ""
        read = self.subject.metadata
        assert read is not None

        def field(resource: Any) -> Any:
            found = read(resource).get(key)
            if typed == "number_value":
                return (
                    found
                    if isinstance(found, (int, float)) and not isinstance(found, bool)
                    else None
                )
            if typed == "string_value":
                return found if isinstance(found, str) else None
            if typed == "bool_value":
                return found if isinstance(found, bool) else None
            return found

        return _compare(field, op, value, name)


def _all(parts: list[Filter]) -> Filter:
    if len(parts) == 1:
        return parts[0]
    required = frozenset().union(*(part.required for part in parts))
    return Filter(lambda resource: all(part(resource) for part in parts), required)


def _any(parts: list[Filter]) -> Filter:
    if len(parts) == 1:
        return parts[0]
    return Filter(lambda resource: any(part(resource) for part in parts))


def _typed(value: str, like: Any, name: str) -> Any:
    """``value`` read as the type of ``like`` (what the resource holds)."""
    if isinstance(like, bool):
        return value.lower() == "true"
    if isinstance(like, (int, float)):
        try:
            return float(value)
        except ValueError:
            return None
    if isinstance(like, datetime) or name in TIME_FIELDS:
        try:
            return parse_time(value)
        except ValueError as err:
            raise InputError.of("filter", f"{name}: {err}") from err
    return value


def _compare(field: Callable[[Any], Any], op: str, value: str, name: str) -> Predicate:
    if name in TIME_FIELDS:
        _typed(value, None, name)  # a bad time is refused at once, not per resource

    def predicate(resource: Any) -> bool:
        found = field(resource)
        if found is None:
            return op == "!="
        if isinstance(found, (list, tuple, set, frozenset)):
            return any(_match(item, op, value, name) for item in found) if op == ":" else False
        return _match(found, op, value, name)

    return predicate


def _match(found: Any, op: str, value: str, name: str) -> bool:
    wanted = _typed(value, found, name)
    if wanted is None:
        return op == "!="
    if op in ("=", ":"):
        return bool(found == wanted)
    if op == "!=":
        return bool(found != wanted)
    try:
        if op == "<":
            return bool(found < wanted)
        if op == "<=":
            return bool(found <= wanted)
        if op == ">":
            return bool(found > wanted)
        return bool(found >= wanted)
    except TypeError:
        return False
