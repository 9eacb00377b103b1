"""The grammar of the Logging query language (:mod:`trainpool.emulator.cloud_logging.query`):
a query's tokens and its parse tree, a :class:`Node`.

A query is at most :data:`MAX_TERMS` comparisons, parentheses at most :data:`MAX_DEPTH`
deep (the emulator's bounds); what it cannot read is INVALID_ARGUMENT naming the ``filter``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trainpool.errors import InputError

MAX_TERMS = 200
MAX_DEPTH = 32
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


def refuse(message: str) -> InputError:
    """INVALID_ARGUMENT naming the query (``filter``)."""
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
            raise refuse(f"cannot read the query at {text[position : position + 20]!r}")
        kind = found.lastgroup or ""
        out.append(Token(kind, found.group(kind)))
        position = found.end()
    return out


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


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


class Parser:
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
            raise refuse("the query ends too soon")
        self.at += 1
        return token

    @staticmethod
    def _is_word(token: Token | None, word: str) -> bool:
        return token is not None and token.kind == "word" and token.text == word

    def expression(self) -> Node:
        """AND of OR-terms; comparisons side by side are ANDed."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise refuse(f"parentheses nested deeper than {MAX_DEPTH}")
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
                raise refuse("a parenthesis is not closed")
            return inner
        if token.kind not in ("word", "string"):
            raise refuse(f"{token.text!r} where a field or a value belongs")
        following = self.peek()
        if (
            token.kind == "word"
            and following is not None
            and following.kind == "paren"
            and following.text == "("
        ):
            raise refuse(
                f"the function {token.text}() is not evaluated by the emulator; accepted: "
                "comparisons (FIELD OP VALUE) joined by AND, OR, NOT"
            )
        self.terms += 1
        if self.terms > MAX_TERMS:
            raise refuse(f"more than {MAX_TERMS} comparisons")
        if following is not None and following.kind == "op":
            if token.kind != "word":
                raise refuse(f"{token.text} is not a field name")
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
                    raise refuse(f"{item.text!r} inside a list of values")
                items.append(_unquote(item.text) if item.kind == "string" else item.text)
            if not items:
                raise refuse("an empty list of values")
            return tuple(items), joiner
        if token.kind not in ("word", "string"):
            raise refuse(f"{token.text!r} where a value belongs")
        return (_unquote(token.text) if token.kind == "string" else token.text,), "OR"


def _field_path(text: str) -> list[str]:
    parts: list[str] = []
    for match in re.finditer(r'"((?:[^"\\]|\\.)*)"|([^."]+)', text):
        parts.append(match.group(1) if match.group(1) is not None else match.group(2))
    return parts
