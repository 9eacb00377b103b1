"""The resource names of Vertex ML Metadata (a MetadataStore, and the Contexts, Artifacts,
Executions and MetadataSchemas in it), checked before a MetadataService method uses them."""

from __future__ import annotations

import re

from trainpool.emulator.api import requests
from trainpool.emulator.records.kinds import Kind
from trainpool.errors import InputError, brief

_STORE = re.compile(r"(projects/[^/]+/locations/[^/]+)/metadataStores/([^/]{1,128})")


def check_store(name: str, field: str = "parent") -> None:
    """INVALID_ARGUMENT unless ``name`` is ``projects/P/locations/L/metadataStores/S``."""
    match = _STORE.fullmatch(name)
    if match is None:
        raise InputError.of(
            field,
            f"{brief(name)} is not a MetadataStore; accepted: "
            "projects/PROJECT/locations/LOCATION/metadataStores/STORE",
        )
    requests.check_parent(match.group(1), field)


def check_node(name: str, kind: Kind, field: str = "name") -> None:
    """INVALID_ARGUMENT unless ``name`` is ``STORE/<kind>/ID``."""
    store, _, rest = name.rpartition(f"/{kind.collection}/")
    if not store or not rest or "/" in rest:
        raise InputError.of(
            field,
            f"{brief(name)} is not a {kind.label} name; accepted: projects/PROJECT/locations/"
            f"LOCATION/metadataStores/STORE/{kind.collection}/ID",
        )
    check_store(store, field)
