"""``trainpool.emulator.v1.Local``: what the emulator says of itself to its own clients.

``Describe() -> {"root", "storage_env", "rest_address"}`` (JSON): the store this emulator
serves, what points Cloud Storage clients at its door (``EmulatorState.storage_env``) and
where its REST door listens (``EmulatorState.rest_address``), so a client that
is given only the emulator's address (``VERTEX_AI_EMULATOR_HOST``) finds the store from
the emulator itself, never from its own ``TRAINPOOL_HOME``
(:func:`trainpool.emulator_client.served_by` is the client). Not a Vertex API.
"""

from __future__ import annotations

import json
from typing import Any

import grpc

from trainpool.emulator.jobs.manager import JobManager
from trainpool.emulator.state import EmulatorState
from trainpool.emulator_client import DESCRIBE_METHOD

SERVICE, METHOD = DESCRIBE_METHOD.strip("/").split("/")


def handler(state: EmulatorState, manager: JobManager) -> grpc.GenericRpcHandler:
    def describe(request: bytes, context: Any) -> bytes:
        answer = {
            "root": str(state.root),
            "storage_env": state.storage_env(),
            "rest_address": state.rest_address,
            "proxy_address": state.proxy_address,
        }
        return json.dumps(answer).encode()

    return grpc.method_handlers_generic_handler(
        SERVICE, {METHOD: grpc.unary_unary_rpc_method_handler(describe)}
    )
