"""``.dockerignore`` patterns, matched the way Docker matches them.

Rules (as moby's ``patternmatcher``): one pattern a line, ``#`` comments,
patterns are relative to the context root (a leading ``/`` is dropped), ``*``
and ``?`` stay within one path segment, ``**`` spans any number of segments,
``!`` re-includes, the last matching pattern wins, and a pattern that matches
a folder matches everything under it.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

DOCKERIGNORE = ".dockerignore"


@dataclass(frozen=True)
class Pattern:
    text: str
    regex: re.Pattern[str]
    negated: bool


def default_text() -> str:
    """trainpool's default ``.dockerignore`` (VCS, virtualenvs, caches, local state)."""
    return (resources.files("trainpool.images") / "templates" / "dockerignore").read_text()


def secrets_text() -> str:
    """Names of credentials, kept out of every context (``templates/secrets-ignore``)."""
    return (resources.files("trainpool.images") / "templates" / "secrets-ignore").read_text()


def _translate(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                raise ValueError(f".dockerignore pattern {pattern!r}: '[' without a closing ']'")
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("^") else body) + "]")
            i = end + 1
        elif char == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def parse(text: str) -> list[Pattern]:
    """The patterns of a ``.dockerignore`` text, in order."""
    patterns = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        body = line[1:].strip() if negated else line
        body = posixpath.normpath(body).lstrip("/")
        if body in ("", "."):
            continue
        patterns.append(Pattern(line, re.compile(_translate(body) + r"\Z"), negated))
    return patterns


def load(context_dir: Path) -> list[Pattern]:
    """The folder's own ``.dockerignore`` when it has one, else trainpool's default; then the
    secret names, last, so no ``!pattern`` of the folder's brings a credential back."""
    own = context_dir / DOCKERIGNORE
    return parse(own.read_text() if own.is_file() else default_text()) + parse(secrets_text())


def ignored(rel_path: str, patterns: list[Pattern]) -> bool:
    """Whether ``rel_path`` (POSIX, relative to the root) is kept out of the context."""
    parts = rel_path.split("/")
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    verdict = False
    for pattern in patterns:
        if any(pattern.regex.match(c) for c in candidates):
            verdict = not pattern.negated
    return verdict
