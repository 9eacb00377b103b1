"""Helpers for writing generic gRPC handlers with the real aiplatform proto types."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc


class RpcError(Exception):
    """Raised inside a method to answer with ``code`` and ``message``."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def unary(
    method: Callable[[Any], Any], request_type: Any, response_serializer: Callable[[Any], bytes]
) -> grpc.RpcMethodHandler:
    """A unary-unary handler: proto-plus request in, response out, :class:`RpcError` as status."""

    def call(request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(request)
        except RpcError as err:
            context.abort(err.code, err.message)

    return grpc.unary_unary_rpc_method_handler(
        call,
        request_deserializer=request_type.deserialize,
        response_serializer=response_serializer,
    )


def invalid(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.NOT_FOUND, message)


def precondition(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.FAILED_PRECONDITION, message)
