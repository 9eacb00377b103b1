"""Writing the services' gRPC handlers with the real aiplatform proto types.

A method takes the proto-plus request and returns the response. It answers an error by
raising: :class:`RpcError` (any status), :class:`trainpool.errors.InputError` (bad input:
INVALID_ARGUMENT with its problems, one per line), or a lookup's ``KeyError`` is left to
the method to turn into :func:`not_found` with the resource's own words. What this machine
cannot hold answers RESOURCE_EXHAUSTED, as Vertex answers a request beyond a quota (429):
a job beyond the replica quota (:class:`trainpool.emulator.jobs.quota.QuotaExceeded`) and a
full disk (:func:`trainpool.emulator.records.database.is_disk_full`), naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from trainpool.emulator.jobs.quota import QuotaExceeded
from trainpool.emulator.records.database import is_disk_full
from trainpool.errors import InputError


class RpcError(Exception):
    """Raised inside a method to answer with ``code`` and ``message``."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def unary(
    method: Callable[[Any], Any], request_type: Any, response_serializer: Callable[[Any], bytes]
) -> grpc.RpcMethodHandler:
    """A unary-unary handler: proto-plus request in, response out, errors as statuses."""

    def call(request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(request)
        except RpcError as err:
            context.abort(err.code, err.message)
        except InputError as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        except QuotaExceeded as err:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(err))
        except Exception as err:
            if not is_disk_full(err):
                raise
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, _disk_message(err))

    return grpc.unary_unary_rpc_method_handler(
        call,
        request_deserializer=request_type.deserialize,
        response_serializer=response_serializer,
    )


def service(name: str, methods: dict[str, tuple[Callable[[Any], Any], Any, Any]]) -> Any:
    """The generic handler of service ``name``: ``{method: (function, RequestType,
    ResponseType)}``; a response type is a proto-plus or protobuf message class."""

    def serializer(response_type: Any) -> Callable[[Any], bytes]:
        return getattr(response_type, "serialize", None) or response_type.SerializeToString

    return grpc.method_handlers_generic_handler(
        name,
        {
            method: unary(function, request_type, serializer(response_type))
            for method, (function, request_type, response_type) in methods.items()
        },
    )


def invalid(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.NOT_FOUND, message)


def precondition(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.FAILED_PRECONDITION, message)


def already_exists(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.ALREADY_EXISTS, message)


def _disk_message(err: BaseException) -> str:
    """A full disk's error as the answer says it: the emulator's own words when it raised
    ``DiskFull`` (they name the store), else the system's."""
    text = str(err)
    if "No space left on the disk" in text:
        return text
    return f"No space left on the emulator's disk: {text}"
