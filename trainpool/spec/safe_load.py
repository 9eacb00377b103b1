"""The one reader of YAML and JSON that users hand to trainpool: bounded, strict, and clear.

Every place that parses a document a person or a client wrote (a cluster request, a
compiled pipeline, a CustomJobSpec file, ``--param`` values, the storage door's JSON
bodies) reads it here, so a hostile document is refused the same way everywhere, with
an :class:`~trainpool.errors.InputError` naming the field, instead of a traceback, a
``RecursionError`` or a ``MemoryError``:

- **size**: at most :data:`MAX_BYTES` (4 MiB, the size of the largest request the
  emulator's gRPC door takes, gRPC's default receive limit); a larger file is refused
  before it is read;
- **encoding**: UTF-8, with or without a byte-order mark. UTF-16 and UTF-32 (by their
  byte-order marks or NUL bytes) and invalid UTF-8 are refused, naming the byte offset;
- **depth and nodes**: at most :data:`MAX_DEPTH` nested lists and mappings (a compiled
  pipeline nests 10) and :data:`MAX_NODES` values in all (it has a few thousand);
  measured while composing, before Python would recurse, so a hostile file stops
  being read at the bound (PyYAML reads about 50,000 values a second);
- **aliases** (YAML's ``*name``): at most :data:`MAX_ALIASES`, never an alias to a node
  that contains it (a cycle), and the document expanded through them at most
  :data:`MAX_EXPANDED` nodes plus characters (a "billion laughs" document is refused
  after reading it once, instead of being expanded by whatever walks it next);
- **types**: only JSON's (mappings, lists, strings, numbers, booleans, null). Explicit
  tags such as ``!!binary``, ``!!set`` or ``!!python/object`` are refused; an unquoted
  date stays text; a number of more than 4,300 digits (Python's own limit) is refused.

These bounds are trainpool's own, not Vertex's: no cluster request or compiled pipeline
comes near them.
"""

from __future__ import annotations

import codecs
import json
import os
from pathlib import Path
from typing import Any

import yaml

from trainpool.errors import InputError, Problem, brief

MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 100_000
MAX_ALIASES = 1000
MAX_EXPANDED = 4 * MAX_BYTES
_TAG = "tag:yaml.org,2002:"
_JSON_TAGS = frozenset(
    _TAG + name for name in ("str", "int", "float", "bool", "null", "seq", "map", "merge")
)
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


class UnsafeDocument(InputError):
    """A document trainpool will not parse: too big, too deep, not UTF-8, not JSON-shaped."""


def _refuse(field: str, message: str) -> UnsafeDocument:
    return UnsafeDocument([Problem(field, message)])


def decode(data: bytes, field: str) -> str:
    """``data`` as text: UTF-8 (a leading byte-order mark dropped), else UnsafeDocument."""
    for bom, name in _WIDE_BOMS:
        if data.startswith(bom):
            raise _refuse(field, f"is {name} text; accepted: UTF-8 text (save the file as UTF-8)")
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        hint = " (UTF-16 without a byte-order mark?)" if b"\0" in data[:64] else ""
        raise _refuse(
            field,
            f"byte {err.start} ({data[err.start : err.start + 1]!r}) is not UTF-8{hint}; "
            "accepted: UTF-8 text",
        ) from None
    if "\0" in text:
        raise _refuse(
            field,
            f"has a NUL character at offset {text.index(chr(0))} (UTF-16 text?); "
            "accepted: UTF-8 text without NUL",
        )
    return text


def read_text(path: str | os.PathLike[str], field: str) -> str:
    """The text of the file at ``path``, bounded by :data:`MAX_BYTES`, decoded by :func:`decode`."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as err:
        raise _refuse(
            field, f"{brief(str(path))} cannot be read ({err.strerror}); accepted: a readable file"
        ) from None
    if len(data) > MAX_BYTES:
        size = os.path.getsize(path) if Path(path).is_file() else len(data)
        raise _refuse(
            field, f"{brief(str(path))} has {size:,} bytes; accepted: at most {MAX_BYTES:,} bytes"
        )
    return decode(data, field)


class _Loader(yaml.SafeLoader):
    """SafeLoader that measures the document while composing it (see the module's bounds)."""

    def __init__(self, stream: str, field: str) -> None:
        super().__init__(stream)
        self.field = field
        self.depth = 0
        self.nodes = 0
        self.aliases = 0
        self.weight: dict[int, int] = {}

    def _fail(self, message: str, node_or_event: Any) -> UnsafeDocument:
        mark = getattr(node_or_event, "start_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        return _refuse(self.field, f"{message}{where}")

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise self._fail(
                    f"more than {MAX_ALIASES} aliases; accepted: at most {MAX_ALIASES}", event
                )
            node = super().compose_node(parent, index)
            if id(node) not in self.weight:
                raise self._fail(
                    f"alias *{event.anchor} refers to a node that contains it; "
                    "accepted: aliases to complete nodes only",
                    event,
                )
            return node
        self.depth += 1
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self._fail(
                f"has more than {MAX_NODES:,} values; accepted: at most {MAX_NODES:,}",
                self.peek_event(),
            )
        if self.depth > MAX_DEPTH:
            raise self._fail(
                f"nests deeper than {MAX_DEPTH} levels; accepted: at most {MAX_DEPTH}",
                self.peek_event(),
            )
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        self._measure(node)
        return node

    def _measure(self, node: Any) -> None:
        if node.tag not in _JSON_TAGS:
            raise self._fail(
                f"tag {node.tag.replace(_TAG, '!!')} is not accepted; accepted: JSON's types "
                "(mappings, lists, strings, numbers, true/false, null)",
                node,
            )
        if isinstance(node, yaml.ScalarNode):
            weight = 1 + len(node.value)
        elif isinstance(node, yaml.SequenceNode):
            weight = 1 + sum(self.weight.get(id(child), 1) for child in node.value)
        else:
            weight = 1 + sum(
                self.weight.get(id(key), 1) + self.weight.get(id(value), 1)
                for key, value in node.value
            )
        if weight > MAX_EXPANDED:
            raise self._fail(
                f"expands through its aliases to more than {MAX_EXPANDED:,} nodes and "
                "characters; accepted: a document whose aliases expand to at most that",
                node,
            )
        self.weight[id(node)] = weight


# an unquoted date stays text (JSON has no dates)
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TAG + "timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _bounded_text(text: str | bytes, field: str) -> str:
    """``text`` as a string within :data:`MAX_BYTES` (bytes decoded as UTF-8)."""
    if isinstance(text, bytes):
        if len(text) > MAX_BYTES:
            raise _refuse(field, f"{len(text):,} bytes; accepted: at most {MAX_BYTES:,} bytes")
        return decode(text, field)
    if len(text) > MAX_BYTES:
        raise _refuse(field, f"{len(text):,} characters; accepted: at most {MAX_BYTES:,} bytes")
    return text


def load_yaml(text: str | bytes, field: str, *, first: bool = False) -> Any:
    """The YAML (or JSON) document of ``text`` as Python data, within the bounds; more than
    one document is refused unless ``first`` (then the first is read: a compiled pipeline
    may carry its platform spec as a second document)."""
    text = _bounded_text(text, field)
    if text.lstrip()[:1] in ("{", "["):
        try:  # JSON is YAML: read it at C speed when it is JSON
            return load_json(text, field)
        except UnsafeDocument as err:
            if "nests deeper" in str(err):
                raise
    loader = None
    try:
        loader = _Loader(text, field)
        if first:
            return loader.get_data() if loader.check_data() else None
        return loader.get_single_data()
    except UnsafeDocument:
        raise
    except yaml.YAMLError as err:
        said = " ".join(str(err).split())
        raise _refuse(
            field,
            f"not valid YAML or JSON: {brief(said, 300, quoted=False)}; accepted: one YAML "
            "or JSON document",
        ) from None
    except ValueError as err:  # e.g. an integer of more than 4300 digits
        raise _refuse(
            field, f"{brief(str(err), 200, quoted=False)}; accepted: numbers of at most 4300 digits"
        ) from None
    finally:
        if loader is not None:
            loader.dispose()


def load_yaml_file(path: str | os.PathLike[str], field: str, *, first: bool = False) -> Any:
    """:func:`load_yaml` of the file at ``path`` (bounded before it is read)."""
    return load_yaml(read_text(path, field), field, first=first)


def _json_depth_problem(text: str) -> int | None:
    """The offset where ``text`` nests deeper than :data:`MAX_DEPTH`, or None."""
    depth, in_string, escaped = 0, False, False
    for offset, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return offset
        elif char in "]}":
            depth -= 1
    return None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_json(text: str | bytes, field: str) -> Any:
    """JSON text as Python data, within the bounds; NaN and Infinity are refused."""
    text = _bounded_text(text, field)
    offset = _json_depth_problem(text)
    if offset is not None:
        raise _refuse(
            field,
            f"nests deeper than {MAX_DEPTH} levels at offset {offset}; "
            f"accepted: at most {MAX_DEPTH}",
        )
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as err:
        raise _refuse(
            field, f"not valid JSON: {err.msg} at offset {err.pos}; accepted: a JSON document"
        ) from None
    except (ValueError, RecursionError) as err:
        raise _refuse(
            field, f"{brief(str(err), 200, quoted=False)}; accepted: a JSON document"
        ) from None
