"""Writing the services' gRPC handlers with the real aiplatform proto types.

A method takes the proto-plus request and returns the response. It answers an error by
raising: :class:`RpcError` (any status), :class:`trainpool.errors.InputError` (bad input:
INVALID_ARGUMENT with its problems, one per line), or a lookup's ``KeyError`` is left to
the method to turn into :func:`not_found` with the resource's own words. What this machine
cannot hold answers RESOURCE_EXHAUSTED, as Vertex answers a request beyond a quota (429):
a job beyond the replica quota (:class:`trainpool.emulator.jobs.quota.QuotaExceeded`) and a
full disk (:func:`trainpool.emulator.records.database.is_disk_full`), naming it.

Before a method sees a request, :func:`trainpool.emulator.api.proto_checks.check_request`
refuses Durations and Timestamps outside protobuf's ranges (INVALID_ARGUMENT). Anything
else a method raises is a fault of the emulator's: it is written, with its traceback, to
the emulator's log (``Home.emulator_log``) and answered INTERNAL with a message that names
the method and the log, never the exception's text.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from trainpool.emulator.api.proto_checks import check_request
from trainpool.emulator.jobs.quota import QuotaExceeded
from trainpool.emulator.records.database import is_disk_full
from trainpool.errors import InputError

LOG = logging.getLogger("trainpool.emulator.rpc")  # its own: open_log stops it propagating


class RpcError(Exception):
    """Raised inside a method to answer with ``code`` and ``message``."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def unary(
    method: Callable[[Any], Any],
    request_type: Any,
    response_serializer: Callable[[Any], bytes],
    name: str = "",
) -> grpc.RpcMethodHandler:
    """A unary-unary handler: proto-plus request in, response out, errors as statuses;
    ``name`` (``JobService.CreateCustomJob``) is what an INTERNAL answer names."""

    def call(request: Any, context: grpc.ServicerContext) -> Any:
        try:
            check_request(request)
            return method(request)
        except RpcError as err:
            context.abort(err.code, err.message)
        except InputError as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        except QuotaExceeded as err:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(err))
        except Exception as err:
            if is_disk_full(err):
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, _disk_message(err))
            LOG.exception("%s failed", name or "a method")
            context.abort(
                grpc.StatusCode.INTERNAL,
                f"{name or 'The method'} failed inside the emulator; its log "
                "(emulator.log in the emulator's root) says why.",
            )

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

    short = name.rsplit(".", 1)[-1]
    return grpc.method_handlers_generic_handler(
        name,
        {
            method: unary(function, request_type, serializer(response_type), f"{short}.{method}")
            for method, (function, request_type, response_type) in methods.items()
        },
    )


def open_log(path: Path, threads: str) -> logging.Handler:
    """Write the records of :data:`LOG` made on threads whose name starts with ``threads``
    (one server's workers) to ``path`` (mode 0600); :func:`close_log` ends it."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    handler.addFilter(lambda record: (record.threadName or "").startswith(threads))
    LOG.addHandler(handler)
    LOG.propagate = False
    return handler


def close_log(handler: logging.Handler) -> None:
    LOG.removeHandler(handler)
    handler.close()


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
