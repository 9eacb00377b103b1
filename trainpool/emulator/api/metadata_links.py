"""The MetadataService methods on the links between Vertex ML Metadata resources and the
lineage read from them: a Context's members and children, an Execution's events
(:mod:`trainpool.emulator.metadata.links`), the lineage subgraphs
(:mod:`trainpool.emulator.metadata.subgraphs`); each link within one MetadataStore. The
other methods are :mod:`trainpool.emulator.api.metadata_service`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.cloud.aiplatform_v1.types import lineage_subgraph as lineage_types
from google.cloud.aiplatform_v1.types import metadata_service as ms

from trainpool.emulator.api.metadata_names import check_node
from trainpool.emulator.metadata import subgraphs
from trainpool.emulator.metadata.store import MetadataRecords, store_of
from trainpool.emulator.records.kinds import ARTIFACTS, CONTEXTS, EXECUTIONS
from trainpool.errors import InputError, brief


def link_methods(store: MetadataRecords) -> dict[str, tuple[Callable[[Any], Any], Any, Any]]:
    """``{method: (function, RequestType, ResponseType)}`` of the link and lineage methods,
    on ``store``."""

    def add_members(
        request: ms.AddContextArtifactsAndExecutionsRequest,
    ) -> ms.AddContextArtifactsAndExecutionsResponse:
        check_node(request.context, CONTEXTS, "context")
        same_store(request.context, [*request.artifacts, *request.executions])
        store.links.add_to_context(request.context, request.artifacts, request.executions)
        return ms.AddContextArtifactsAndExecutionsResponse()

    def add_children(request: ms.AddContextChildrenRequest) -> ms.AddContextChildrenResponse:
        check_node(request.context, CONTEXTS, "context")
        same_store(request.context, request.child_contexts)
        store.links.add_children(request.context, request.child_contexts)
        return ms.AddContextChildrenResponse()

    def remove_children(
        request: ms.RemoveContextChildrenRequest,
    ) -> ms.RemoveContextChildrenResponse:
        check_node(request.context, CONTEXTS, "context")
        store.links.remove_children(request.context, request.child_contexts)
        return ms.RemoveContextChildrenResponse()

    def add_events(request: ms.AddExecutionEventsRequest) -> ms.AddExecutionEventsResponse:
        check_node(request.execution, EXECUTIONS, "execution")
        same_store(request.execution, [e.artifact for e in request.events])
        store.links.add_events(request.execution, request.events)
        return ms.AddExecutionEventsResponse()

    def inputs_outputs(request: ms.QueryExecutionInputsAndOutputsRequest) -> Any:
        check_node(request.execution, EXECUTIONS, "execution")
        return subgraphs.inputs_and_outputs(store, request.execution)

    def context_lineage(request: ms.QueryContextLineageSubgraphRequest) -> Any:
        check_node(request.context, CONTEXTS, "context")
        return subgraphs.context_subgraph(store, request.context)

    def artifact_lineage(request: ms.QueryArtifactLineageSubgraphRequest) -> Any:
        check_node(request.artifact, ARTIFACTS, "artifact")
        return subgraphs.artifact_subgraph(
            store, request.artifact, request.max_hops, request.filter
        )

    def same_store(owner: str, names: Any) -> None:
        home = store_of(owner)
        for name in names:
            if store_of(name) != home:
                raise InputError.of(
                    "request",
                    f"{brief(name)} is not in {home}; accepted: resources of the same "
                    "MetadataStore",
                )

    return {
        "AddContextArtifactsAndExecutions": (
            add_members,
            ms.AddContextArtifactsAndExecutionsRequest,
            ms.AddContextArtifactsAndExecutionsResponse,
        ),
        "AddContextChildren": (
            add_children,
            ms.AddContextChildrenRequest,
            ms.AddContextChildrenResponse,
        ),
        "RemoveContextChildren": (
            remove_children,
            ms.RemoveContextChildrenRequest,
            ms.RemoveContextChildrenResponse,
        ),
        "QueryContextLineageSubgraph": (
            context_lineage,
            ms.QueryContextLineageSubgraphRequest,
            lineage_types.LineageSubgraph,
        ),
        "AddExecutionEvents": (
            add_events,
            ms.AddExecutionEventsRequest,
            ms.AddExecutionEventsResponse,
        ),
        "QueryExecutionInputsAndOutputs": (
            inputs_outputs,
            ms.QueryExecutionInputsAndOutputsRequest,
            lineage_types.LineageSubgraph,
        ),
        "QueryArtifactLineageSubgraph": (
            artifact_lineage,
            ms.QueryArtifactLineageSubgraphRequest,
            lineage_types.LineageSubgraph,
        ),
    }
