"""Path templates of ``google.api.http`` rules, matched against request paths.

The syntax is the one ``google/api/http.proto`` defines (and grpc-gateway and ESPv2
transcode with)::

    Template = "/" Segments [ Verb ] ;
    Segments = Segment { "/" Segment } ;
    Segment  = "*" | "**" | LITERAL | Variable ;
    Variable = "{" FieldPath [ "=" Segments ] "}" ;
    FieldPath = IDENT { "." IDENT } ;
    Verb     = ":" LITERAL ;

``*`` matches one path segment, ``**`` zero or more; a variable without ``=`` is one
segment. A variable's value is the text its segments matched, percent-decoded: fully when
it spans one segment, and except ``%2F`` when it spans several ("the server side does the
reverse decoding, except "%2F" and "%2f" are left unchanged", http.proto). The custom verb
(``:cancel``) is split from the last segment of the request path before matching.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class TemplateError(ValueError):
    """A rule's template that does not follow the grammar (a fault of the rule, not the request)."""


@dataclass(frozen=True)
class Template:
    """A parsed template: ``pattern`` matches the path without its verb."""

    text: str
    pattern: re.Pattern[str]
    variables: tuple[tuple[str, str, bool], ...]
    """(group name, field path, spans several segments) per variable."""
    verb: str
    literals: int
    """How many literal segments (more is more specific: tried first)."""
    shape: tuple[str | None, ...] | None = None
    """Each path segment it matches: its literal, or None for any one segment; None when
    it has ``**`` (it matches paths of any length)."""

    def match(self, path: str, verb: str) -> dict[str, str] | None:
        """``{field path: value}`` when ``path`` (without its verb) and ``verb`` match."""
        if verb != self.verb:
            return None
        found = self.pattern.fullmatch(path)
        if found is None:
            return None
        values: dict[str, str] = {}
        for group, field, multi in self.variables:
            raw = found.group(group)
            values[field] = _decode(raw, multi)
        return values


def _decode(raw: str, multi: bool) -> str:
    if not multi:
        return unquote(raw)
    return "%2F".join(unquote(part) for part in re.split("%2[Ff]", raw))


def _segments_regex(segments: list[str]) -> tuple[str, int, bool]:
    """The regex of ``segments``, its literal count, and whether it can span segments."""
    parts: list[str] = []
    literals = 0
    multi = len(segments) > 1
    for segment in segments:
        if segment == "*":
            parts.append("[^/]+")
        elif segment == "**":
            parts.append(".*")
            multi = True
        elif segment and "{" not in segment and "}" not in segment and "*" not in segment:
            parts.append(re.escape(segment))
            literals += 1
        else:
            raise TemplateError(f"segment {segment!r}")
    return "/".join(parts), literals, multi


def _split_top(text: str) -> list[str]:
    """``text`` split on ``/`` outside braces."""
    out: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        if char == "/" and depth == 0:
            out.append("".join(current))
            current = []
        else:
            current.append(char)
    out.append("".join(current))
    return out


def parse(text: str) -> Template:
    """Parse ``text`` (``/v1/{parent=projects/*/locations/*}/customJobs``)."""
    if not text.startswith("/"):
        raise TemplateError(f"{text!r} does not start with /")
    body, verb = text[1:], ""
    last_close = body.rfind("}")
    colon = body.rfind(":")
    if colon > last_close and colon > body.rfind("/"):
        body, verb = body[:colon], body[colon + 1 :]
    parts: list[str] = []
    variables: list[tuple[str, str, bool]] = []
    literals = 0
    shape: list[str | None] = []
    for segment in _split_top(body):
        if segment.startswith("{") and segment.endswith("}"):
            field, _, inner = segment[1:-1].partition("=")
            if not _IDENT.match(field):
                raise TemplateError(f"field path {field!r}")
            shape += [None if s in ("*", "**") else s for s in _split_top(inner or "*")]
            regex, count, multi = _segments_regex(_split_top(inner or "*"))
            group = f"v{len(variables)}"
            parts.append(f"(?P<{group}>{regex})")
            variables.append((group, field, multi))
            literals += count
        else:
            regex, count, _ = _segments_regex([segment])
            shape.append(None if segment in ("*", "**") else segment)
            parts.append(regex)
            literals += count
    # "**" may match nothing: "a/**" matches "a" as well as "a/b/c".
    pattern = "/".join(parts).replace("/.*", "(?:/.*)?")
    fixed = None if "**" in body else tuple(shape)
    return Template(text, re.compile(pattern), tuple(variables), verb, literals, fixed)


def split_verb(path: str) -> tuple[str, str]:
    """``/v1/x/y:cancel`` -> (``v1/x/y``, ``cancel``); the path loses its leading ``/``."""
    body = path[1:] if path.startswith("/") else path
    head, sep, last = body.rpartition("/")
    name, colon, verb = last.partition(":")
    if not colon:
        return body, ""
    return (f"{head}/{name}" if sep else name), verb
