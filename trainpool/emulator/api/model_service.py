"""``google.cloud.aiplatform.v1.ModelService``: UploadModel, GetModel, ListModels, DeleteModel.

Enough of the Model Registry for the SDK's training-job classes (a TrainingPipeline with
``modelToUpload``; ``aiplatform.Model(name)`` is GetModel) and for ``aiplatform.Model.upload``
(:mod:`trainpool.emulator.records.models`). ``GetModel`` accepts ``models/ID@VERSION`` as
Vertex does.
"""

from __future__ import annotations

from google.cloud.aiplatform_v1.types import model as model_types
from google.cloud.aiplatform_v1.types import model_service as ms
from google.longrunning import operations_pb2

from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import Service, not_found, service
from trainpool.emulator.jobs.manager import JobManager
from trainpool.emulator.records import models
from trainpool.emulator.records.kinds import MODELS
from trainpool.emulator.state import EmulatorState

SERVICE = "google.cloud.aiplatform.v1.ModelService"


def handler(state: EmulatorState, manager: JobManager) -> Service:
    """The ModelService handler."""

    def upload(request: ms.UploadModelRequest) -> operations_pb2.Operation:
        requests.check_parent(request.parent)
        requests.check_display_name(request.model.display_name, "model.display_name")
        requests.check_labels(request.model.labels, "model.labels")
        if request.model.artifact_uri:
            requests.check_gcs_uri(request.model.artifact_uri, "model.artifact_uri")
        model = models.register(
            state.db, state.records, request.parent, request.model, request.model_id
        )
        response = ms.UploadModelResponse(model=model.name, model_version_id=model.version_id)
        return state.finished(model.name, response)

    def get(request: ms.GetModelRequest) -> model_types.Model:
        requests.check_name(request.name.partition("@")[0], MODELS.collection)
        found = models.get(state.records, request.name)
        if found is None:
            raise not_found(f"Model {request.name} not found.")
        return found

    def delete(request: ms.DeleteModelRequest) -> operations_pb2.Operation:
        found = get(ms.GetModelRequest(name=request.name))
        state.records.delete(MODELS, found.name)
        return state.finished(found.name)

    def list_models(request: ms.ListModelsRequest) -> ms.ListModelsResponse:
        found, token = requests.list_page(state.records, MODELS, request)
        return ms.ListModelsResponse(models=found, next_page_token=token)

    return service(
        SERVICE,
        {
            "UploadModel": (upload, ms.UploadModelRequest, operations_pb2.Operation),
            "GetModel": (get, ms.GetModelRequest, model_types.Model),
            "ListModels": (list_models, ms.ListModelsRequest, ms.ListModelsResponse),
            "DeleteModel": (delete, ms.DeleteModelRequest, operations_pb2.Operation),
        },
    )
