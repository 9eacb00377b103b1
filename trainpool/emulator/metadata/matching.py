"""Which Vertex ML Metadata resources a List or Purge filter matches, and in what order:
what a filter reads of each kind (its documented fields, ``metadata``, ``in_context``,
``parent_contexts``, ``child_contexts``; :mod:`trainpool.emulator.metadata.filters` parses
it) and the ``order_by`` a List accepts."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format

from trainpool.emulator.metadata import filters
from trainpool.emulator.metadata.links import MetadataLinks
from trainpool.emulator.records.kinds import ARTIFACTS, CONTEXTS, Kind
from trainpool.errors import InputError, brief


def metadata_dict(resource: Any) -> dict[str, Any]:
    """The ``metadata`` Struct of a Context, Artifact or Execution as a dict."""
    raw = type(resource).pb(resource)
    return json_format.MessageToDict(raw.metadata) if raw.HasField("metadata") else {}


def in_store(links: MetadataLinks, kind: Kind, parent: str) -> list[Any]:
    """Every ``kind`` in store ``parent``, in creation order."""
    rows = links.db.read(
        "SELECT proto FROM resources WHERE kind = ? AND parent = ? ORDER BY seq",
        (kind.collection, parent),
    )
    return [kind.message.deserialize(row["proto"]) for row in rows]


def matching(links: MetadataLinks, kind: Kind, parent: str, filter: str) -> list[Any]:
    """The ``kind`` in store ``parent`` that match ``filter``, in creation order."""
    parsed = filters.parse(filter, subject(links, kind))
    contexts = [argument for name, argument in parsed.required if name == "in_context"]
    if contexts:  # only a context's members can match: read those alone
        found = links.db.read(
            "SELECT r.proto FROM metadata_links l JOIN resources r ON r.name = l.member "
            "WHERE l.context = ? AND l.kind = ? AND r.kind = ? AND r.parent = ? "
            "ORDER BY r.seq",
            (contexts[0], kind.collection[:-1], kind.collection, parent),
        )
        rows = [kind.message.deserialize(row["proto"]) for row in found]
    else:
        rows = in_store(links, kind, parent)
    return [r for r in rows if parsed(r)]


def subject(links: MetadataLinks, kind: Kind) -> filters.Subject:
    """How a filter reads ``kind`` (its documented fields, metadata, context functions)."""
    fields = {
        "name",
        "display_name",
        "schema_title",
        "schema_version",
        "create_time",
        "update_time",
    }
    if kind is not CONTEXTS:
        fields.add("state")
    if kind is ARTIFACTS:
        fields.add("uri")
    functions: dict[str, Callable[[str], filters.Predicate]] = {}
    has: dict[str, Callable[[str], filters.Predicate]] = {}
    if kind is CONTEXTS:
        has["parent_contexts"] = lambda name: lambda r: name in r.parent_contexts
        has["child_contexts"] = lambda child: _has_child(links, child)
    else:
        functions["in_context"] = _in_context(links, kind)
    return filters.Subject(frozenset(fields), _field, functions, has, metadata=metadata_dict)


def _in_context(links: MetadataLinks, kind: Kind) -> Callable[[str], filters.Predicate]:
    def function(context: str) -> filters.Predicate:
        members = set(links.members(context, kind.collection[:-1]))
        return lambda resource: resource.name in members

    return function


def _has_child(links: MetadataLinks, child: str) -> filters.Predicate:
    found = links.records.get(CONTEXTS, child)
    parents = set(found.parent_contexts) if found is not None else set()
    return lambda resource: resource.name in parents


def _field(resource: Any, name: str) -> Any:
    value = getattr(resource, name)
    if name == "state":
        return type(value)(value).name
    return value


def ordered(found: list[Any], order_by: str) -> list[Any]:
    keys = []
    for part in reversed([p.strip() for p in order_by.split(",") if p.strip()]):
        name, _, direction = part.partition(" ")
        if name not in ("name", "display_name", "create_time", "update_time", "schema_title"):
            raise InputError.of(
                "order_by",
                f"{brief(name)}; accepted: name, display_name, schema_title, create_time, "
                "update_time, each optionally followed by desc",
            )
        keys.append((name, direction.strip().lower() == "desc"))
    for name, descending in keys:
        found = sorted(found, key=operator.attrgetter(name), reverse=descending)
    return found
