"""v1beta1 beside v1: each Vertex AI service the emulator serves at ``v1`` is served at
``v1beta1`` by the same handlers.

Vertex AI publishes every service twice, ``google.cloud.aiplatform.v1`` and
``google.cloud.aiplatform.v1beta1`` (the SDK's ``preview`` classes, ``vertexai.preview`` and
GCPC's ``v1beta1`` components call the second). The two share field names; v1beta1 has
fields v1 lacks. A v1beta1 request is read field by field into its v1 twin (by name, through
protobuf's JSON mapping), handled, and the v1 answer written back as v1beta1. A field set
in the request that v1 does not have is refused with INVALID_ARGUMENT naming it: the
emulator applies v1's fields, and never drops one silently. Long-running operations carry
their results as ``Any``: those are rewritten to the v1beta1 types the client unpacks.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

import grpc
from google.protobuf import json_format

from trainpool.emulator.api.rpc import Method, Service, new_message, raw_message, wrap_message
from trainpool.errors import InputError, Problem

V1 = "google.cloud.aiplatform.v1."
V1BETA1 = "google.cloud.aiplatform.v1beta1."
_V1_MODULE = "google.cloud.aiplatform_v1."
_BETA_MODULE = "google.cloud.aiplatform_v1beta1."


def beta_name(name: str) -> str:
    """``google.cloud.aiplatform.v1.X`` -> ``google.cloud.aiplatform.v1beta1.X``."""
    return V1BETA1 + name[len(V1) :]


def v1_name(name: str) -> str:
    """``google.cloud.aiplatform.v1beta1.X`` -> ``google.cloud.aiplatform.v1.X`` ("" if not)."""
    return V1 + name[len(V1BETA1) :] if name.startswith(V1BETA1) else ""


def beta_twin(service: Service) -> Service:
    """The v1beta1 service of v1 ``service``: the same methods, over v1beta1's types."""
    return Service(
        beta_name(service.name),
        {name: _beta_method(service, method) for name, method in service.methods.items()},
    )


class Twins:
    """The v1beta1 twins of the v1 services in ``served``, made on first use: importing
    v1beta1's types takes most of a second, which an emulator that is never asked for
    v1beta1 should not pay at start."""

    def __init__(self, served: dict[str, Service]) -> None:
        self.served = served
        self._made: dict[str, Service] = {}
        self._handlers: dict[str, grpc.GenericRpcHandler] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> Service | None:
        """The v1beta1 service ``name`` when its v1 twin is served, else None."""
        v1 = self.served.get(v1_name(name))
        if v1 is None:
            return None
        with self._lock:
            if name not in self._made:
                self._made[name] = beta_twin(v1)
            return self._made[name]

    def names(self) -> list[str]:
        return [beta_name(n) for n in self.served if n.startswith(V1)]


class BetaHandler(grpc.GenericRpcHandler):
    """Serves the v1beta1 twins over gRPC, each made when first called."""

    def __init__(self, twins: Twins) -> None:
        self.twins = twins

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Any:
        name = (handler_call_details.method or "").strip("/").partition("/")[0]
        if not name.startswith(V1BETA1):
            return None
        twin = self.twins.get(name)
        if twin is None:
            return None
        with self.twins._lock:
            handler = self.twins._handlers.get(name)
            if handler is None:
                handler = self.twins._handlers[name] = twin.grpc_handler()
        return handler.service(handler_call_details)


def _beta_type(message_type: Any) -> Any:
    """v1beta1's class of the same name as v1 proto-plus ``message_type``; a type of
    neither (``Operation``, ``Empty``) is shared."""
    module = getattr(message_type, "__module__", "")
    if not module.startswith(_V1_MODULE):
        return message_type
    found: Any = importlib.import_module(_BETA_MODULE + module[len(_V1_MODULE) :])
    for part in message_type.__qualname__.split("."):
        found = getattr(found, part)
    return found


def _unknown(beta: Any, v1: Any, path: str) -> list[Problem]:
    """Fields set in ``beta`` that v1's descriptor ``v1`` has no field of that name for."""
    found: list[Problem] = []
    for field, value in beta.ListFields():
        where = f"{path}.{field.name}" if path else field.name
        twin = v1.fields_by_name.get(field.name)
        if twin is None:
            found.append(
                Problem(
                    where,
                    "a v1beta1 field that v1 does not have; the emulator applies v1's "
                    "fields only (this one is not emulated)",
                )
            )
            continue
        if field.message_type is None or twin.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            entry = field.message_type.fields_by_name["value"]
            twin_entry = twin.message_type.fields_by_name["value"]
            if entry.message_type is not None and twin_entry.message_type is not None:
                for key, item in value.items():
                    found += _unknown(item, twin_entry.message_type, f"{where}[{key!r}]")
        elif _is_repeated(field):
            for index, item in enumerate(value):
                found += _unknown(item, twin.message_type, f"{where}[{index}]")
        else:
            found += _unknown(value, twin.message_type, where)
    return found


def _is_repeated(field: Any) -> bool:
    repeated = getattr(field, "is_repeated", None)
    return bool(repeated) if repeated is not None else field.label == field.LABEL_REPEATED


def to_v1(request: Any, v1_type: Any) -> Any:
    """v1beta1 ``request`` as v1 ``v1_type``; InputError naming every field v1 lacks."""
    raw = raw_message(request)
    out = new_message(v1_type)
    problems = _unknown(raw, out.DESCRIPTOR, "")
    if problems:
        raise InputError(problems)
    data = json_format.MessageToDict(raw, preserving_proto_field_name=True)
    json_format.ParseDict(_retype(data, V1BETA1, V1), out)
    return wrap_message(v1_type, out)


def to_beta(response: Any, beta_type: Any) -> Any:
    """v1 ``response`` as v1beta1 ``beta_type`` (fields v1beta1 lacks are left out)."""
    data = json_format.MessageToDict(raw_message(response), preserving_proto_field_name=True)
    out = new_message(beta_type)
    json_format.ParseDict(_retype(data, V1, V1BETA1), out, ignore_unknown_fields=True)
    return wrap_message(beta_type, out)


def _retype(data: Any, old: str, new: str) -> Any:
    """``data`` with every ``Any``'s ``@type`` of package ``old`` renamed to ``new``."""
    if isinstance(data, dict):
        out = {key: _retype(value, old, new) for key, value in data.items()}
        kind = out.get("@type")
        if isinstance(kind, str) and f"/{old}" in kind:
            out["@type"] = kind.replace(f"/{old}", f"/{new}")
        return out
    if isinstance(data, list):
        return [_retype(item, old, new) for item in data]
    return data


def _beta_method(service: Service, method: Method) -> Method:
    response_type = _beta_type(method.response_type)

    def function(request: Any) -> Any:
        answer = service.call(method.name, to_v1(request, method.request_type))
        return to_beta(answer, response_type)

    return Method(method.name, function, _beta_type(method.request_type), response_type)
