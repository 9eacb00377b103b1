"""``google.cloud.aiplatform.v1.MetadataService``: Vertex ML Metadata, every method.

What the Vertex AI SDK's Experiments (``aiplatform.init(experiment=...)``, ``start_run``,
``log_params``, ``log_metrics``, ``get_experiment_df``), its lineage classes
(``aiplatform.Artifact``, ``Execution``, ``Context``) and ``aiplatform.get_pipeline_df``
call, kept by :mod:`trainpool.emulator.metadata.store` (links and events:
:mod:`~trainpool.emulator.metadata.links`; lineage:
:mod:`~trainpool.emulator.metadata.subgraphs`); PipelineJobs record their lineage here too
(:mod:`trainpool.emulator.metadata.pipeline_lineage`). Long-running methods
(Create/DeleteMetadataStore, Delete*, Purge*) answer a finished Operation. The methods on
links and lineage are :mod:`trainpool.emulator.api.metadata_links`; the names every method
checks, :mod:`trainpool.emulator.api.metadata_names`.
"""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1.types import artifact as artifact_types
from google.cloud.aiplatform_v1.types import context as context_types
from google.cloud.aiplatform_v1.types import execution as execution_types
from google.cloud.aiplatform_v1.types import metadata_schema as schema_types
from google.cloud.aiplatform_v1.types import metadata_service as ms
from google.cloud.aiplatform_v1.types import metadata_store as store_types
from google.longrunning import operations_pb2

from trainpool.emulator.api import requests
from trainpool.emulator.api.metadata_links import link_methods
from trainpool.emulator.api.metadata_names import check_node, check_store
from trainpool.emulator.api.rpc import Service, service
from trainpool.emulator.jobs.manager import JobManager
from trainpool.emulator.metadata.store import metadata_of
from trainpool.emulator.records.kinds import (
    ARTIFACTS,
    CONTEXTS,
    EXECUTIONS,
    METADATA_SCHEMAS,
    METADATA_STORES,
    Kind,
)
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError

SERVICE = "google.cloud.aiplatform.v1.MetadataService"


def handler(state: EmulatorState, manager: JobManager) -> Service:
    """The MetadataService handler."""
    store = metadata_of(state)

    def checked(resource: Any, field: str) -> None:
        requests.check_display_name(resource.display_name, f"{field}.display_name", required=False)
        requests.check_labels(resource.labels, f"{field}.labels")
        requests.check_no_nul(type(resource).to_dict(resource), field)

    # -- stores -----------------------------------------------------------------------------
    def create_store(request: ms.CreateMetadataStoreRequest) -> operations_pb2.Operation:
        requests.check_parent(request.parent)
        created = store.create_store(
            request.parent, request.metadata_store_id, request.metadata_store
        )
        return state.finished(created.name, created)

    def get_store(request: ms.GetMetadataStoreRequest) -> Any:
        check_store(request.name, "name")
        return store.require_store(request.name)

    def list_stores(request: ms.ListMetadataStoresRequest) -> ms.ListMetadataStoresResponse:
        found, token = requests.list_page(state.records, METADATA_STORES, request)
        return ms.ListMetadataStoresResponse(metadata_stores=found, next_page_token=token)

    def delete_store(request: ms.DeleteMetadataStoreRequest) -> operations_pb2.Operation:
        check_store(request.name, "name")
        store.delete_store(request.name)
        return state.finished(request.name)

    # -- artifacts, contexts, executions ----------------------------------------------------
    def creator(kind: Kind, field: str, id_field: str) -> Any:
        def create(request: Any) -> Any:
            check_store(request.parent)
            resource = getattr(request, field)
            checked(resource, field)
            return store.create(
                kind, request.parent, getattr(request, id_field), resource, id_field
            )

        return create

    def getter(kind: Kind) -> Any:
        def get(request: Any) -> Any:
            check_node(request.name, kind)
            return store.require(kind, request.name)

        return get

    def lister(kind: Kind, response_type: Any, field: str) -> Any:
        def list_nodes(request: Any) -> Any:
            check_store(request.parent)
            page = store.page(
                kind,
                request.parent,
                filter=request.filter,
                page_size=request.page_size,
                page_token=request.page_token,
                order_by=getattr(request, "order_by", ""),
            )
            return response_type(**{field: page.items, "next_page_token": page.next_token})

        return list_nodes

    def updater(kind: Kind, field: str) -> Any:
        def update(request: Any) -> Any:
            resource = getattr(request, field)
            check_node(resource.name, kind, f"{field}.name")
            checked(resource, field)
            mask = type(request).pb(request).update_mask if "update_mask" in request else None
            return store.update(kind, resource, mask, request.allow_missing)

        return update

    def deleter(kind: Kind) -> Any:
        def delete(request: Any) -> operations_pb2.Operation:
            check_node(request.name, kind)
            store.delete(kind, request.name, request.etag)
            return state.finished(request.name)

        return delete

    def purger(kind: Kind, response_type: Any) -> Any:
        def purge(request: Any) -> operations_pb2.Operation:
            check_store(request.parent)
            count, sample = store.purge(kind, request.parent, request.filter, request.force)
            response = response_type(
                purge_count=count, purge_sample=[] if request.force else sample
            )
            return state.finished(request.parent, response)

        return purge

    # -- schemas ----------------------------------------------------------------------------
    def create_schema(request: ms.CreateMetadataSchemaRequest) -> Any:
        check_store(request.parent)
        schema = request.metadata_schema
        if not schema.schema.strip():
            raise InputError.of(
                "metadata_schema.schema", "is empty; accepted: an OpenAPI 3.0 YAML object"
            )
        return store.create(
            METADATA_SCHEMAS,
            request.parent,
            request.metadata_schema_id,
            schema,
            "metadata_schema_id",
        )

    def list_schemas(request: ms.ListMetadataSchemasRequest) -> ms.ListMetadataSchemasResponse:
        check_store(request.parent)
        page = store.page(
            METADATA_SCHEMAS,
            request.parent,
            page_size=request.page_size,
            page_token=request.page_token,
        )
        return ms.ListMetadataSchemasResponse(
            metadata_schemas=page.items, next_page_token=page.next_token
        )

    op = operations_pb2.Operation
    return service(
        SERVICE,
        {
            "CreateMetadataStore": (create_store, ms.CreateMetadataStoreRequest, op),
            "GetMetadataStore": (get_store, ms.GetMetadataStoreRequest, store_types.MetadataStore),
            "ListMetadataStores": (
                list_stores,
                ms.ListMetadataStoresRequest,
                ms.ListMetadataStoresResponse,
            ),
            "DeleteMetadataStore": (delete_store, ms.DeleteMetadataStoreRequest, op),
            "CreateArtifact": (
                creator(ARTIFACTS, "artifact", "artifact_id"),
                ms.CreateArtifactRequest,
                artifact_types.Artifact,
            ),
            "GetArtifact": (getter(ARTIFACTS), ms.GetArtifactRequest, artifact_types.Artifact),
            "ListArtifacts": (
                lister(ARTIFACTS, ms.ListArtifactsResponse, "artifacts"),
                ms.ListArtifactsRequest,
                ms.ListArtifactsResponse,
            ),
            "UpdateArtifact": (
                updater(ARTIFACTS, "artifact"),
                ms.UpdateArtifactRequest,
                artifact_types.Artifact,
            ),
            "DeleteArtifact": (deleter(ARTIFACTS), ms.DeleteArtifactRequest, op),
            "PurgeArtifacts": (
                purger(ARTIFACTS, ms.PurgeArtifactsResponse),
                ms.PurgeArtifactsRequest,
                op,
            ),
            "CreateContext": (
                creator(CONTEXTS, "context", "context_id"),
                ms.CreateContextRequest,
                context_types.Context,
            ),
            "GetContext": (getter(CONTEXTS), ms.GetContextRequest, context_types.Context),
            "ListContexts": (
                lister(CONTEXTS, ms.ListContextsResponse, "contexts"),
                ms.ListContextsRequest,
                ms.ListContextsResponse,
            ),
            "UpdateContext": (
                updater(CONTEXTS, "context"),
                ms.UpdateContextRequest,
                context_types.Context,
            ),
            "DeleteContext": (deleter(CONTEXTS), ms.DeleteContextRequest, op),
            "PurgeContexts": (
                purger(CONTEXTS, ms.PurgeContextsResponse),
                ms.PurgeContextsRequest,
                op,
            ),
            "CreateExecution": (
                creator(EXECUTIONS, "execution", "execution_id"),
                ms.CreateExecutionRequest,
                execution_types.Execution,
            ),
            "GetExecution": (getter(EXECUTIONS), ms.GetExecutionRequest, execution_types.Execution),
            "ListExecutions": (
                lister(EXECUTIONS, ms.ListExecutionsResponse, "executions"),
                ms.ListExecutionsRequest,
                ms.ListExecutionsResponse,
            ),
            "UpdateExecution": (
                updater(EXECUTIONS, "execution"),
                ms.UpdateExecutionRequest,
                execution_types.Execution,
            ),
            "DeleteExecution": (deleter(EXECUTIONS), ms.DeleteExecutionRequest, op),
            "PurgeExecutions": (
                purger(EXECUTIONS, ms.PurgeExecutionsResponse),
                ms.PurgeExecutionsRequest,
                op,
            ),
            "CreateMetadataSchema": (
                create_schema,
                ms.CreateMetadataSchemaRequest,
                schema_types.MetadataSchema,
            ),
            "GetMetadataSchema": (
                getter(METADATA_SCHEMAS),
                ms.GetMetadataSchemaRequest,
                schema_types.MetadataSchema,
            ),
            "ListMetadataSchemas": (
                list_schemas,
                ms.ListMetadataSchemasRequest,
                ms.ListMetadataSchemasResponse,
            ),
            **link_methods(store),
        },
    )
