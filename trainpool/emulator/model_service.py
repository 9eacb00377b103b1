"""``google.cloud.aiplatform.v1.ModelService``: UploadModel, GetModel, ListModels.

Enough of the Model Registry for the SDK's training-job classes (a TrainingPipeline with
``modelToUpload``; ``aiplatform.Model(name)`` is GetModel) and for ``aiplatform.Model.upload``.
A model is a record: its ``artifactUri`` names files in the local store, nothing is
served. Every model has one version, "1" (REST reference:
https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.models).
``GetModel`` accepts ``models/ID@VERSION`` as Vertex does.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

import grpc
from google.cloud.aiplatform_v1.types import model as model_types
from google.cloud.aiplatform_v1.types import model_service as ms
from google.longrunning import operations_pb2
from google.protobuf import any_pb2

from trainpool.emulator import validation
from trainpool.emulator.list_filter import page_after, paginate
from trainpool.emulator.rpc import invalid, not_found, unary
from trainpool.emulator.state import EmulatorState

SERVICE = "google.cloud.aiplatform.v1.ModelService"
KIND = "models"
VERSION = "1"
MODEL_ID = re.compile(r"^[a-z0-9][-a-z0-9]{0,127}$")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS models (
  name TEXT PRIMARY KEY, parent TEXT NOT NULL, seq INTEGER NOT NULL, proto BLOB NOT NULL
);
"""


class Models:
    """Model records in SQLite (shared by the TrainingPipeline service's uploads)."""

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.db = state.db
        self.db.executescript(_SCHEMA)

    def insert(
        self, parent: str, model: model_types.Model, model_id: str = ""
    ) -> model_types.Model:
        """Store ``model`` under ``parent`` as version "1"; INVALID_ARGUMENT for a bad field."""
        validation.check_parent(parent)
        if not model.display_name:
            raise invalid("model.display_name: '' is empty; accepted: a non-empty name")
        if model_id and not MODEL_ID.match(model_id):
            raise invalid(
                f"model_id: {model_id!r}; accepted: lowercase letters, digits and '-', "
                "starting with a letter or digit, at most 128 characters"
            )
        seq = self.state.new_id("model")
        model.name = f"{parent}/{KIND}/{model_id or seq}"
        if self.db.execute("SELECT 1 FROM models WHERE name = ?", (model.name,)):
            raise invalid(f"model_id: {model_id!r} is taken; accepted: an unused id")
        stamp = datetime.now(timezone.utc)
        model.version_id = VERSION
        model.version_aliases = ["default"]
        model.create_time = model.update_time = model.version_create_time = stamp
        self.db.execute(
            "INSERT INTO models (name, parent, seq, proto) VALUES (?, ?, ?, ?)",
            (model.name, parent, int(seq), model_types.Model.serialize(model)),
        )
        return model

    def get(self, name: str) -> model_types.Model:
        base, _, version = name.partition("@")
        validation.check_name(base, KIND)
        rows = self.db.execute("SELECT proto FROM models WHERE name = ?", (base,))
        if not rows or version not in ("", VERSION, "default"):
            raise not_found(f"Model {name} not found.")
        return model_types.Model.deserialize(rows[0]["proto"])

    def list(self, request: ms.ListModelsRequest) -> ms.ListModelsResponse:
        validation.check_parent(request.parent)
        rows = self.db.execute(
            "SELECT seq, proto FROM models WHERE parent = ? AND seq > ? ORDER BY seq",
            (request.parent, page_after(request.page_token)),
        )
        items, token = paginate(
            [(r["seq"], model_types.Model.deserialize(r["proto"])) for r in rows], request
        )
        return ms.ListModelsResponse(models=items, next_page_token=token)

    def upload(self, request: ms.UploadModelRequest) -> operations_pb2.Operation:
        model = self.insert(request.parent, request.model, request.model_id)
        response = any_pb2.Any()
        response.Pack(
            ms.UploadModelResponse.pb(
                ms.UploadModelResponse(model=model.name, model_version_id=model.version_id)
            )
        )
        return operations_pb2.Operation(
            name=f"{model.name}/operations/{self.state.new_id('operation')}",
            done=True,
            response=response,
        )


def handler(state: EmulatorState) -> grpc.GenericRpcHandler:
    """The ModelService handler."""
    models = Models(state)
    ser = model_types.Model.serialize
    methods = {
        "UploadModel": unary(
            models.upload, ms.UploadModelRequest, operations_pb2.Operation.SerializeToString
        ),
        "GetModel": unary(lambda r: models.get(r.name), ms.GetModelRequest, ser),
        "ListModels": unary(models.list, ms.ListModelsRequest, ms.ListModelsResponse.serialize),
    }
    return grpc.method_handlers_generic_handler(SERVICE, methods)
