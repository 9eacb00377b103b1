"""The MetadataService methods on the links between Vertex ML Metadata resources and the
lineage read from them: a Context's members and children, an Execution's events
(:mod:`trainpool.emulator.metadata.links`), the lineage subgraphs
(:mod:`trainpool.emulator.metadata.subgraphs`); each link within one MetadataStore. The
other methods are :mod:`trainpool.emulator.metadata.metadata_service`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.cloud.aiplatform_v1.types import lineage_subgraph as lineage_types
from google.cloud.aiplatform_v1.types import metadata_service as ms

from trainpool.emulator.metadata import subgraphs
from trainpool.emulator.metadata.metadata_names import check_node
from trainpool.emulator.metadata.metadata_records import MetadataRecords, store_of
from trainpool.emulator.records.kinds import ARTIFACTS, CONTEXTS, EXECUTIONS
from trainpool.errors import InputError, brief


class MetadataLinks:
    """The link and lineage methods of MetadataService, on one :class:`MetadataRecords`."""

    def __init__(self, store: MetadataRecords) -> None:
        self.store = store

    def add_members(
        self, request: ms.AddContextArtifactsAndExecutionsRequest
    ) -> ms.AddContextArtifactsAndExecutionsResponse:
        check_node(request.context, CONTEXTS, "context")
        same_store(request.context, [*request.artifacts, *request.executions])
        self.store.links.add_to_context(request.context, request.artifacts, request.executions)
        return ms.AddContextArtifactsAndExecutionsResponse()

    def add_children(self, request: ms.AddContextChildrenRequest) -> ms.AddContextChildrenResponse:
        check_node(request.context, CONTEXTS, "context")
        same_store(request.context, request.child_contexts)
        self.store.links.add_children(request.context, request.child_contexts)
        return ms.AddContextChildrenResponse()

    def remove_children(
        self, request: ms.RemoveContextChildrenRequest
    ) -> ms.RemoveContextChildrenResponse:
        check_node(request.context, CONTEXTS, "context")
        self.store.links.remove_children(request.context, request.child_contexts)
        return ms.RemoveContextChildrenResponse()

    def add_events(self, request: ms.AddExecutionEventsRequest) -> ms.AddExecutionEventsResponse:
        check_node(request.execution, EXECUTIONS, "execution")
        same_store(request.execution, [e.artifact for e in request.events])
        self.store.links.add_events(request.execution, request.events)
        return ms.AddExecutionEventsResponse()

    def inputs_outputs(self, request: ms.QueryExecutionInputsAndOutputsRequest) -> Any:
        check_node(request.execution, EXECUTIONS, "execution")
        return subgraphs.inputs_and_outputs(self.store, request.execution)

    def context_lineage(self, request: ms.QueryContextLineageSubgraphRequest) -> Any:
        check_node(request.context, CONTEXTS, "context")
        return subgraphs.context_subgraph(self.store, request.context)

    def artifact_lineage(self, request: ms.QueryArtifactLineageSubgraphRequest) -> Any:
        check_node(request.artifact, ARTIFACTS, "artifact")
        return subgraphs.artifact_subgraph(
            self.store, request.artifact, request.max_hops, request.filter
        )


def same_store(owner: str, names: Any) -> None:
    """INVALID_ARGUMENT unless every one of ``names`` is in ``owner``'s MetadataStore."""
    home = store_of(owner)
    for name in names:
        if store_of(name) != home:
            raise InputError.of(
                "request",
                f"{brief(name)} is not in {home}; accepted: resources of the same MetadataStore",
            )


def link_methods(store: MetadataRecords) -> dict[str, tuple[Callable[[Any], Any], Any, Any]]:
    """``{method: (function, RequestType, ResponseType)}`` of the link and lineage methods,
    on ``store``."""
    links = MetadataLinks(store)
    return {
        "AddContextArtifactsAndExecutions": (
            links.add_members,
            ms.AddContextArtifactsAndExecutionsRequest,
            ms.AddContextArtifactsAndExecutionsResponse,
        ),
        "AddContextChildren": (
            links.add_children,
            ms.AddContextChildrenRequest,
            ms.AddContextChildrenResponse,
        ),
        "RemoveContextChildren": (
            links.remove_children,
            ms.RemoveContextChildrenRequest,
            ms.RemoveContextChildrenResponse,
        ),
        "QueryContextLineageSubgraph": (
            links.context_lineage,
            ms.QueryContextLineageSubgraphRequest,
            lineage_types.LineageSubgraph,
        ),
        "AddExecutionEvents": (
            links.add_events,
            ms.AddExecutionEventsRequest,
            ms.AddExecutionEventsResponse,
        ),
        "QueryExecutionInputsAndOutputs": (
            links.inputs_outputs,
            ms.QueryExecutionInputsAndOutputsRequest,
            lineage_types.LineageSubgraph,
        ),
        "QueryArtifactLineageSubgraph": (
            links.artifact_lineage,
            ms.QueryArtifactLineageSubgraphRequest,
            lineage_types.LineageSubgraph,
        ),
    }
