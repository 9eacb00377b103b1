"""Writing the services' gRPC handlers with the real aiplatform proto types.

A method takes the proto-plus request and returns the response. It answers an error by
raising: :class:`RpcError` (any status), :class:`trainpool.errors.InputError` (bad input:
INVALID_ARGUMENT with its problems, one per line), or a lookup's ``KeyError`` is left to
the method to turn into :func:`not_found` with the resource's own words. What this machine
cannot hold answers RESOURCE_EXHAUSTED, as Vertex answers a request beyond a quota (429):
a job beyond the replica quota (:class:`QuotaExceeded`, which the job engine raises) and a
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.message import Message

from trainpool.emulator.api import read_masks
from trainpool.emulator.api.proto_checks import check_request
from trainpool.emulator.records.database import is_disk_full
from trainpool.errors import InputError

LOG = logging.getLogger("trainpool.emulator.rpc")  # its own: open_log stops it propagating


class QuotaExceeded(Exception):
    """A request beyond what this emulator's quota could ever hold (a job needing more
    replicas than the whole replica quota): answered RESOURCE_EXHAUSTED. Raised by the job
    engine; defined here, with the errors every service shares, so the table that answers
    it knows no service."""


class RpcError(Exception):
    """Raised inside a method to answer with ``code`` and ``message``."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Method:
    """One method of a service: ``function`` takes the proto-plus (or protobuf) request of
    ``request_type`` and returns a ``response_type``."""

    name: str
    function: Callable[..., Any]
    request_type: Any
    response_type: Any
    streaming: bool = False
    """A bidirectional stream: ``function(requests, active)`` takes the requests' iterator
    and a ``active()`` that is False once the client has gone, and yields responses.
    Served over gRPC only (REST answers that it is not)."""


@dataclass(frozen=True)
class Service:
    """A service the emulator serves: its full name (``google.cloud.aiplatform.v1.JobService``)
    and its methods. Every door calls a method through :meth:`call`, so gRPC, REST and
    v1beta1 answer with the same checks and the same errors."""

    name: str
    methods: dict[str, Method]

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    def call(self, method: str, request: Any) -> Any:
        """The response of ``method`` to ``request``; every failure is an :class:`RpcError`.
        A List request's ``read_mask`` is applied here (:mod:`.read_masks`), for every door."""
        served = self.methods[method]

        def answer(request: Any) -> Any:
            fields = read_masks.requested(request, served.response_type)
            response = served.function(request)
            return response if fields is None else read_masks.apply(fields, response)

        return invoke(answer, request, f"{self.short}.{method}")

    def grpc_handler(self) -> grpc.GenericRpcHandler:
        return grpc.method_handlers_generic_handler(
            self.name,
            {
                name: (_stream if method.streaming else _unary)(
                    self, name, method.request_type, _serializer(method.response_type)
                )
                for name, method in self.methods.items()
            },
        )


def invoke(function: Callable[[Any], Any], request: Any, name: str = "") -> Any:
    """``function(request)`` with the checks every request gets, its failures as
    :class:`RpcError`: ``InputError`` INVALID_ARGUMENT, the replica quota and a full disk
    RESOURCE_EXHAUSTED, anything else INTERNAL (logged, its text never answered).
    ``name`` (``JobService.CreateCustomJob``) is what an INTERNAL answer names."""
    try:
        check_request(request)
        return function(request)
    except RpcError:
        raise
    except InputError as err:
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, str(err)) from err
    except QuotaExceeded as err:
        raise RpcError(grpc.StatusCode.RESOURCE_EXHAUSTED, str(err)) from err
    except Exception as err:
        if is_disk_full(err):
            raise RpcError(grpc.StatusCode.RESOURCE_EXHAUSTED, _disk_message(err)) from err
        LOG.exception("%s failed", name or "a method")
        raise RpcError(
            grpc.StatusCode.INTERNAL,
            f"{name or 'The method'} failed inside the emulator; its log "
            "(emulator.log in the emulator's root) says why.",
        ) from err


def _serializer(response_type: Any) -> Callable[[Any], bytes]:
    return getattr(response_type, "serialize", None) or response_type.SerializeToString


def _unary(
    service: Service, method: str, request_type: Any, serializer: Callable[[Any], bytes]
) -> grpc.RpcMethodHandler:
    def call(request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return service.call(method, request)
        except RpcError as err:
            context.abort(err.code, err.message)

    return grpc.unary_unary_rpc_method_handler(
        call, request_deserializer=request_type.deserialize, response_serializer=serializer
    )


def _stream(
    service: Service, method: str, request_type: Any, serializer: Callable[[Any], bytes]
) -> grpc.RpcMethodHandler:
    function = service.methods[method].function
    where = f"{service.short}.{method}"

    def call(requests: Any, context: grpc.ServicerContext) -> Any:
        try:
            yield from function(requests, context.is_active)
        except RpcError as err:
            context.abort(err.code, err.message)
        except InputError as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        except Exception:
            LOG.exception("%s failed", where)
            context.abort(
                grpc.StatusCode.INTERNAL,
                f"{where} failed inside the emulator; its log (emulator.log in the "
                "emulator's root) says why.",
            )

    return grpc.stream_stream_rpc_method_handler(
        call, request_deserializer=request_type.deserialize, response_serializer=serializer
    )


def service(
    name: str,
    methods: dict[str, tuple[Callable[[Any], Any], Any, Any]],
    streams: dict[str, tuple[Callable[..., Any], Any, Any]] | None = None,
) -> Service:
    """Service ``name``: ``{method: (function, RequestType, ResponseType)}``, and
    ``streams`` the same for bidirectional streams (:attr:`Method.streaming`); a response
    type is a proto-plus or protobuf message class. A request type is proto-plus (its
    ``deserialize``) or protobuf (wrapped in :class:`Protobuf`)."""
    table = {
        method: Method(method, function, _request_type(request_type), response_type)
        for method, (function, request_type, response_type) in methods.items()
    }
    for method, (function, request_type, response_type) in (streams or {}).items():
        table[method] = Method(
            method, function, _request_type(request_type), response_type, streaming=True
        )
    return Service(name, table)


def typed(
    types: Any, answers: Mapping[str, tuple[Callable[[Any], Any], Any]]
) -> dict[str, tuple[Callable[[Any], Any], Any, Any]]:
    """:func:`service`'s ``{method: (function, RequestType, ResponseType)}`` of ``answers``
    (``{method: (function, ResponseType)}``), each request type ``<method>Request`` of
    ``types`` (the service's types module, or a protobuf module), as Google names them and
    as :mod:`trainpool.emulator.standard_methods` finds them."""
    return {
        method: (function, getattr(types, f"{method}Request"), response_type)
        for method, (function, response_type) in answers.items()
    }


class Protobuf:
    """A protobuf message class with proto-plus's ``deserialize``, ``pb`` and ``wrap``, so
    every request type reads alike (``google.longrunning`` requests are plain protobuf)."""

    def __init__(self, message_class: Any) -> None:
        self.message_class = message_class
        self.__name__ = message_class.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.message_class(*args, **kwargs)

    def deserialize(self, data: bytes) -> Any:
        return self.message_class.FromString(data)

    def pb(self, message: Any = None) -> Any:
        return message if message is not None else self.message_class()

    def wrap(self, message: Any) -> Any:
        return message


def new_message(message_type: Any) -> Any:
    """An empty raw protobuf message of ``message_type`` (proto-plus, :class:`Protobuf` or
    a protobuf class)."""
    if isinstance(message_type, type) and issubclass(message_type, Message):
        return message_type()
    return message_type.pb(message_type())


def wrap_message(message_type: Any, raw: Any) -> Any:
    """Raw protobuf ``raw`` as ``message_type`` gives it to a method (proto-plus wraps it)."""
    if isinstance(message_type, type) and issubclass(message_type, Message):
        return raw
    return message_type.wrap(raw)


def raw_message(message: Any) -> Any:
    """The raw protobuf message of ``message`` (proto-plus or protobuf)."""
    return message if isinstance(message, Message) else type(message).pb(message)


def _request_type(request_type: Any) -> Any:
    if hasattr(request_type, "deserialize"):
        return request_type
    return Protobuf(request_type)


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
