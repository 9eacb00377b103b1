"""``trainpool.emulator.v1.Faults``: the emulator's own service, beside Vertex's API.

``PreemptJob(PreemptJobRequest{name}) -> CustomJob`` preempts a RUNNING CustomJob
(:func:`trainpool.emulator.preemption.preempt`) and answers with the ended job. Vertex has
no such method; it is how tests and ``trainpool jobs preempt`` reach a running emulator
from another process. The request is a proto-plus message of package
``trainpool.emulator.v1``; :func:`preempt_job` is its client.
"""

from __future__ import annotations

import grpc
import proto  # type: ignore[import-untyped]
from google.cloud.aiplatform_v1.types import custom_job as cj

from trainpool.emulator.preemption import preempt
from trainpool.emulator.rpc import unary
from trainpool.emulator.runner import runner_for
from trainpool.emulator.state import EmulatorState

SERVICE = "trainpool.emulator.v1.Faults"

__protobuf__ = proto.module(package="trainpool.emulator.v1", manifest={"PreemptJobRequest"})


class PreemptJobRequest(proto.Message):  # type: ignore[misc]
    """``name``: the CustomJob's resource name."""

    name: str = proto.Field(proto.STRING, number=1)


def handler(state: EmulatorState) -> grpc.GenericRpcHandler:
    runner = runner_for(state)
    methods = {
        "PreemptJob": unary(
            lambda request: preempt(runner, request.name),
            PreemptJobRequest,
            cj.CustomJob.serialize,
        )
    }
    return grpc.method_handlers_generic_handler(SERVICE, methods)


def preempt_job(address: str, name: str, timeout_s: float = 60.0) -> cj.CustomJob:
    """Preempt CustomJob ``name`` on the emulator at ``address`` (``unix:/PATH`` or
    ``127.0.0.1:PORT``); the ended job. Errors are ``grpc.RpcError`` with the server's
    status code and message."""
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(
            f"/{SERVICE}/PreemptJob",
            request_serializer=PreemptJobRequest.serialize,
            response_deserializer=cj.CustomJob.deserialize,
        )
        job: cj.CustomJob = call(PreemptJobRequest(name=name), timeout=timeout_s)
        return job
