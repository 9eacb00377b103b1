"""``google.cloud.aiplatform.v1.ModelService``: the Model Registry, its versions and aliases.

UploadModel (a new Model, or with ``parent_model`` a new version of one), GetModel
(``models/ID``, ``models/ID@VERSION``, ``models/ID@ALIAS``), ListModels, ListModelVersions,
MergeVersionAliases, UpdateModel, DeleteModelVersion and DeleteModel, enough for the SDK's
``aiplatform.Model.upload(parent_model=..., version_aliases=...)``, ``aiplatform.models.
ModelRegistry`` and the training-job classes (a TrainingPipeline with ``modelToUpload``).
The rules and their sources are in :mod:`trainpool.emulator.model_registry.models`. Nothing is
served: a Model is a record whose ``artifactUri`` names files in the local store.
GetModel, ListModels, UpdateModel and DeleteModel are :mod:`trainpool.emulator.standard_methods`
(the Model declared to it, kept by :class:`Models`); UploadModel, ListModelVersions,
MergeVersionAliases and DeleteModelVersion are written here: a Model is uploaded, not created
(its id optional, a new version of ``parent_model``, answered ``UploadModelResponse``), and
versions and aliases are the Model Registry's own, not standard methods.
"""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1.types import model as model_types
from google.cloud.aiplatform_v1.types import model_service as ms
from google.longrunning import operations_pb2
from google.protobuf import empty_pb2

from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import Service, not_found, precondition, service
from trainpool.emulator.model_registry import models
from trainpool.emulator.records.kinds import MODELS, Kind
from trainpool.emulator.standard_methods import Resource, methods
from trainpool.emulator.state import EmulatorState

SERVICE = "google.cloud.aiplatform.v1.ModelService"


def _registry(call: Any) -> Any:
    """``call`` with the registry's refusals as gRPC statuses (NOT_FOUND,
    FAILED_PRECONDITION)."""

    def answer(request: Any) -> Any:
        try:
            return call(request)
        except models.NotFound as err:
            raise not_found(str(err)) from None
        except models.Refused as err:
            raise precondition(str(err)) from None

    return answer


def check_model_name(name: str, field: str = "name") -> None:
    """A Model's name, with or without ``@VERSION`` or ``@ALIAS``."""
    requests.check_name(name.partition("@")[0], MODELS.collection)
    if "@" in name:
        models.check_reference(name.partition("@")[2], field)


def check_update_name(name: str, field: str) -> None:
    """UpdateModel's ``model.name``: a Model's, a version's or an alias's, or ``@-`` (every
    version)."""
    requests.check_name(name.partition("@")[0], MODELS.collection)
    if name.partition("@")[2] not in ("", "-"):
        models.check_reference(name.partition("@")[2], field)


def check_base_name(name: str, field: str) -> None:
    """DeleteModel's ``name``: the Model's own, without a version."""
    requests.check_name(name, MODELS.collection)


class Models:
    """The Model Registry's Models (:mod:`trainpool.emulator.model_registry.models`) as the
    standard methods call them."""

    def __init__(self, state: EmulatorState) -> None:
        self.records = state.records

    def create(self, kind: Kind, parent: str, resource_id: str, resource: Any, field: str) -> Any:
        """Not called: a Model is uploaded (:meth:`ModelService.upload`)."""
        raise NotImplementedError("UploadModel creates Models")

    def require(self, kind: Kind, name: str) -> Any:
        found = models.get(self.records, name)
        if found is None:
            raise not_found(f"Model {name} not found.")
        return found

    def page(self, kind: Kind, parent: str, **query: Any) -> tuple[list[Any], str]:
        return self.records.page(MODELS, parent, **query)

    def update(self, kind: Kind, given: Any, request: Any) -> Any:
        paths = list(ms.UpdateModelRequest.pb(request).update_mask.paths)
        if "labels" in paths:
            requests.check_labels(given.labels, "model.labels")
        if "display_name" in paths:
            requests.check_display_name(given.display_name, "model.display_name")
        return models.update(self.records, given, paths)

    def delete(self, kind: Kind, request: Any) -> None:
        if not models.delete(self.records, request.name):
            raise not_found(f"Model {request.name} not found.")


def resources(state: EmulatorState) -> tuple[Resource, ...]:
    """The Model, declared to :mod:`trainpool.emulator.standard_methods` once per name rule:
    Get reads a version or an alias (``models/ID@REF``), Update also every version (``@-``),
    Delete the Model alone. ListModels filters; it does not order (Models have no times)."""
    kept = Models(state)
    parent = requests.check_parent
    return (
        Resource(MODELS, kept, parent, check_model_name, verbs=("Get",)),
        Resource(MODELS, kept, parent, check_update_name, verbs=("Update",)),
        Resource(
            MODELS,
            kept,
            parent,
            check_base_name,
            verbs=("List", "Delete"),
            operations=("Delete",),
            queries=("filter",),
        ),
    )


class ModelService:
    """The methods of ModelService that are not standard, over the emulator's records
    (:mod:`trainpool.emulator.model_registry.models`)."""

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.records = state.records

    def upload(self, request: ms.UploadModelRequest) -> operations_pb2.Operation:
        requests.check_parent(request.parent)
        requests.check_display_name(request.model.display_name, "model.display_name")
        requests.check_labels(request.model.labels, "model.labels")
        if request.model.artifact_uri:
            requests.check_gcs_uri(request.model.artifact_uri, "model.artifact_uri")
        if request.parent_model:
            check_model_name(request.parent_model, "parent_model")
        model = models.register(
            self.state.db,
            self.records,
            request.parent,
            request.model,
            request.model_id,
            request.parent_model,
        )
        response = ms.UploadModelResponse(model=model.name, model_version_id=model.version_id)
        return self.state.finished(model.name, response)

    def list_versions(self, request: ms.ListModelVersionsRequest) -> ms.ListModelVersionsResponse:
        requests.check_name(request.name, MODELS.collection)
        found, token = models.page(
            self.records,
            request.name,
            filter=request.filter,
            page_size=request.page_size,
            page_token=request.page_token,
            order_by=request.order_by,
        )
        return ms.ListModelVersionsResponse(models=found, next_page_token=token)

    def merge_aliases(self, request: ms.MergeVersionAliasesRequest) -> model_types.Model:
        check_model_name(request.name)
        return models.merge_aliases(self.records, request.name, list(request.version_aliases))

    def delete_version(self, request: ms.DeleteModelVersionRequest) -> operations_pb2.Operation:
        check_model_name(request.name)
        gone = models.delete_version(self.records, request.name)
        return self.state.finished(gone, empty_pb2.Empty())


def handler(state: EmulatorState) -> Service:
    """The ModelService handler."""
    registry = ModelService(state)
    written: dict[str, Any] = {
        "UploadModel": (registry.upload, ms.UploadModelRequest, operations_pb2.Operation),
        "ListModelVersions": (
            registry.list_versions,
            ms.ListModelVersionsRequest,
            ms.ListModelVersionsResponse,
        ),
        "MergeVersionAliases": (
            registry.merge_aliases,
            ms.MergeVersionAliasesRequest,
            model_types.Model,
        ),
        "DeleteModelVersion": (
            registry.delete_version,
            ms.DeleteModelVersionRequest,
            operations_pb2.Operation,
        ),
    }
    table = {**methods(ms, state.finished, *resources(state)), **written}
    return service(
        SERVICE,
        {method: (_registry(call), req, resp) for method, (call, req, resp) in table.items()},
    )
