"""The one shape of a bad-input error: a list of problems, each naming a field.

Every error trainpool raises for input a person or a client got wrong (a cluster request,
a pipeline parameter, a ``gs://`` URI, a submit target, a study, a build context) is an
:class:`InputError`: a ``ValueError`` whose ``problems`` each say what is wrong, where, and
what would be accepted, and whose ``str()`` is one problem per line. Callers that gather
problems from several checks (``trainpool submit``, the emulator's request checks) add up
``problems``; nothing needs to parse a message.

Standard library only, and nothing of trainpool's, so every layer may raise it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input: ``field`` is its path, ``message`` says value and fix."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message

    @classmethod
    def parse(cls, line: str) -> Problem:
        """A ``"field: message"`` line as a problem (a line without ``": "`` has no field)."""
        field, sep, message = line.partition(": ")
        return cls(field, message) if sep else cls("", line)


class InputError(ValueError):
    """Bad input; ``problems`` each name a field, ``str()`` is one problem per line."""

    def __init__(self, problems: Iterable[Problem | str] | Problem | str) -> None:
        if isinstance(problems, Problem | str):
            problems = [problems]
        self.problems = [p if isinstance(p, Problem) else Problem.parse(p) for p in problems]
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def of(cls, field: str, message: str) -> InputError:
        """One problem: ``field: message``."""
        return cls([Problem(field, message)])


def brief(value: object, limit: int = 80, *, quoted: bool = True) -> str:
    """``value`` as it reads in a message: ``repr`` of a string (its text when not
    ``quoted``), cut to about ``limit`` characters with its full length said, so a 20 MB
    value makes a short message."""
    if isinstance(value, str | bytes):
        unit = "characters" if isinstance(value, str) else "bytes"
        if not quoted:
            text = printable(value[:limit]) if isinstance(value, str) else repr(value[:limit])
            return text if len(value) <= limit else f"{text}... ({len(value):,} {unit})"
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}... ({len(value):,} {unit})"
    text = str(value)
    return text if len(text) <= limit + 20 else f"{text[:limit]}... ({len(text):,} characters)"


def printable(text: str) -> str:
    """``text`` with each character that does not print (NUL, controls, line feeds) written
    as its escape, so a message stays one readable line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
