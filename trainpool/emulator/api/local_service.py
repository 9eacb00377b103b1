"""``trainpool.emulator.v1.Local``: what the emulator says of itself to its own clients.

``Describe() -> {"root", "storage_env", "rest_address"}`` (JSON): the store this emulator
serves, what points Cloud Storage clients at its door (``EmulatorState.storage_env``) and
where its REST door listens (``EmulatorState.rest_address``), so a client that
is given only the emulator's address (``VERTEX_AI_EMULATOR_HOST``) finds the store from
the emulator itself, never from its own ``TRAINPOOL_HOME``
(:func:`trainpool.emulator_client.served_by` is the client).

``Push({"image", "id", "size", "created"}) -> DockerImage`` (JSON both ways): record that
the container engine's image ``id`` was pushed as ``image`` to Artifact Registry
(:func:`trainpool.emulator.records.repositories.record_push`); what ``docker push`` under
``trainpool exec`` calls (:mod:`trainpool.redirect.docker`, client
:func:`trainpool.emulator_client.registry.record_push`). A push Artifact Registry refuses answers
FAILED_PRECONDITION with its words. Not Vertex APIs.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import grpc
from google.cloud.artifactregistry_v1.types import artifact

from trainpool.emulator.jobs.manager import JobManager
from trainpool.emulator.records.repositories import PushRefused, record_push
from trainpool.emulator.state import EmulatorState
from trainpool.emulator_client import DESCRIBE_METHOD
from trainpool.emulator_client.registry import PUSH_METHOD

SERVICE, METHOD = DESCRIBE_METHOD.strip("/").split("/")
PUSH = PUSH_METHOD.rsplit("/", 1)[1]


def handler(state: EmulatorState, manager: JobManager) -> grpc.GenericRpcHandler:
    def describe(request: bytes, context: Any) -> bytes:
        answer = {
            "root": str(state.root),
            "storage_env": state.storage_env(),
            "rest_address": state.rest_address,
            "proxy_address": state.proxy_address,
        }
        return json.dumps(answer).encode()

    def push(request: bytes, context: Any) -> bytes:
        try:
            asked = json.loads(request)
            image, image_id = str(asked["image"]), str(asked["id"])
            created = str(asked.get("created") or "")
            built = datetime.fromisoformat(created[:26].rstrip("Z")) if created else None
            size = int(asked.get("size") or 0)
        except (ValueError, KeyError, TypeError) as err:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"Push: {err}; accepted: JSON with image, id, size and created",
            )
        try:
            record = record_push(state, image, image_id, size, built)
        except PushRefused as err:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(err))
        return artifact.DockerImage.to_json(record).encode()

    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            METHOD: grpc.unary_unary_rpc_method_handler(describe),
            PUSH: grpc.unary_unary_rpc_method_handler(push),
        },
    )
