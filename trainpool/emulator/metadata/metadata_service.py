"""``google.cloud.aiplatform.v1.MetadataService``: Vertex ML Metadata, every method.

What the Vertex AI SDK's Experiments (``aiplatform.init(experiment=...)``, ``start_run``,
``log_params``, ``log_metrics``, ``get_experiment_df``), its lineage classes
(``aiplatform.Artifact``, ``Execution``, ``Context``) and ``aiplatform.get_pipeline_df``
call, kept by :mod:`trainpool.emulator.metadata.metadata_records` (links and events:
:mod:`~trainpool.emulator.metadata.links`; lineage:
:mod:`~trainpool.emulator.metadata.subgraphs`); PipelineJobs record their lineage here too
(:mod:`trainpool.emulator.metadata.pipeline_lineage`). Long-running methods
(Create/DeleteMetadataStore, Delete*, Purge*) answer a finished Operation. Create, Get,
List, Update and Delete are :mod:`trainpool.emulator.standard_methods`, given the resources
:func:`resources` declares. The methods on
links and lineage are :mod:`trainpool.emulator.metadata.metadata_links`; the names every method
checks, :mod:`trainpool.emulator.metadata.metadata_names`.
"""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1.types import metadata_service as ms
from google.longrunning import operations_pb2

from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import Service, service
from trainpool.emulator.metadata.metadata_links import link_methods
from trainpool.emulator.metadata.metadata_names import check_node, check_store
from trainpool.emulator.metadata.metadata_records import MetadataRecords
from trainpool.emulator.records.kinds import (
    ARTIFACTS,
    CONTEXTS,
    EXECUTIONS,
    METADATA_SCHEMAS,
    METADATA_STORES,
    Kind,
)
from trainpool.emulator.standard_methods import Resource, methods
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError

SERVICE = "google.cloud.aiplatform.v1.MetadataService"


class _Nodes:
    """:class:`MetadataRecords`' Contexts, Artifacts, Executions and MetadataSchemas as the
    standard methods call them: an update reads ``update_mask`` and ``allow_missing``, a
    delete its ``etag``."""

    def __init__(self, store: MetadataRecords) -> None:
        self.store = store
        self.create = store.create
        self.require = store.require

    def page(self, kind: Kind, parent: str, **query: Any) -> tuple[list[Any], str]:
        page = self.store.page(kind, parent, **query)
        return page.items, page.next_token

    def update(self, kind: Kind, resource: Any, request: Any) -> Any:
        mask = type(request).pb(request).update_mask if "update_mask" in request else None
        return self.store.update(kind, resource, mask, request.allow_missing)

    def delete(self, kind: Kind, request: Any) -> None:
        self.store.delete(kind, request.name, request.etag)


class _Stores:
    """The MetadataStores themselves, as the standard methods call them."""

    def __init__(self, state: EmulatorState, store: MetadataRecords) -> None:
        self.state = state
        self.store = store

    def create(self, kind: Kind, parent: str, resource_id: str, resource: Any, field: str) -> Any:
        return self.store.create_store(parent, resource_id, resource)

    def require(self, kind: Kind, name: str) -> Any:
        return self.store.require_store(name)

    def page(self, kind: Kind, parent: str, **query: Any) -> tuple[list[Any], str]:
        return self.state.records.page(kind, parent, **query)

    def update(self, kind: Kind, resource: Any, request: Any) -> Any:
        raise NotImplementedError("MetadataStores are not updated (no UpdateMetadataStore)")

    def delete(self, kind: Kind, request: Any) -> None:
        self.store.delete_store(request.name)


def checked(resource: Any, field: str, creating: bool) -> None:
    """A Context's, Artifact's or Execution's display name, labels and text."""
    requests.check_display_name(resource.display_name, f"{field}.display_name", required=False)
    requests.check_labels(resource.labels, f"{field}.labels")
    requests.check_no_nul(type(resource).to_dict(resource), field)


def schema_checked(schema: Any, field: str, creating: bool) -> None:
    if not schema.schema.strip():
        raise InputError.of(f"{field}.schema", "is empty; accepted: an OpenAPI 3.0 YAML object")


def resources(state: EmulatorState, store: MetadataRecords) -> tuple[Resource, ...]:
    """The Metadata resources, declared to :mod:`trainpool.emulator.standard_methods`."""
    nodes = _Nodes(store)

    def node(kind: Kind) -> Resource:
        return Resource(
            kind,
            nodes,
            check_store,
            lambda name, field: check_node(name, kind, field),
            checked,
            operations=("Delete",),
        )

    return (
        Resource(
            METADATA_STORES,
            _Stores(state, store),
            requests.check_parent,
            check_store,
            verbs=("Create", "Get", "List", "Delete"),
            operations=("Create", "Delete"),
            queries=(),  # ListMetadataStoresRequest has no filter
        ),
        node(ARTIFACTS),
        node(CONTEXTS),
        node(EXECUTIONS),
        Resource(
            METADATA_SCHEMAS,
            nodes,
            check_store,
            lambda name, field: check_node(name, METADATA_SCHEMAS, field),
            schema_checked,
            verbs=("Create", "Get", "List"),
            queries=(),
        ),
    )


def handler(state: EmulatorState, store: MetadataRecords) -> Service:
    """The MetadataService handler, over the emulator's ML Metadata ``store``."""

    def purger(kind: Kind, response_type: Any) -> Any:
        def purge(request: Any) -> operations_pb2.Operation:
            check_store(request.parent)
            count, sample = store.purge(kind, request.parent, request.filter, request.force)
            response = response_type(
                purge_count=count, purge_sample=[] if request.force else sample
            )
            return state.finished(request.parent, response)

        return purge

    op = operations_pb2.Operation
    return service(
        SERVICE,
        {
            **methods(ms, state.finished, *resources(state, store)),
            "PurgeArtifacts": (
                purger(ARTIFACTS, ms.PurgeArtifactsResponse),
                ms.PurgeArtifactsRequest,
                op,
            ),
            "PurgeContexts": (
                purger(CONTEXTS, ms.PurgeContextsResponse),
                ms.PurgeContextsRequest,
                op,
            ),
            "PurgeExecutions": (
                purger(EXECUTIONS, ms.PurgeExecutionsResponse),
                ms.PurgeExecutionsRequest,
                op,
            ),
            **link_methods(store),
        },
    )
