"""An HTTP/JSON request made into the method's proto request, and its answer into JSON.

As ``google/api/http.proto`` says: the path's variables fill the fields they name; the body
fills the field the rule names (``body: "custom_job"``), or the whole request (``body:
"*"``); every query parameter that is not a system parameter fills the field its (dotted)
name names, "repeated fields can be represented as multiple query parameters". JSON is
proto3's JSON mapping (camelCase names, or the proto's own; enums by name or number;
int64 as strings; Duration ``"3600s"``; FieldMask ``"a,b"``). A name no field has, a
value of the wrong type, or a body that is not a JSON object is refused with 400 naming it,
in the words Google's front end uses (``Invalid JSON payload received. Unknown name
"foo" at 'custom_job': Cannot find field.``). The answer is the response message in the
same mapping, camelCase, enums by name, or by number when the client asks
(``$alt=json;enum-encoding=int``, what the generated REST transports send).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from trainpool.errors import InputError

SYSTEM_PARAMETERS = frozenset(
    {
        "$alt",
        "alt",
        "$fields",
        "fields",
        "key",
        "prettyPrint",
        "$prettyPrint",
        "quotaUser",
        "$quotaUser",
        "userIp",
        "callback",
        "$callback",
        "access_token",
        "upload_protocol",
        "uploadType",
        "oauth_token",
        "$.xgafv",
        "requestReason",
    }
)
"""Parameters every Google API takes that are not request fields (Google's "System
Parameters" page): they are read by the front end and dropped."""
_WRAPPED_AS_STRING = {
    "google.protobuf.Duration",
    "google.protobuf.Timestamp",
    "google.protobuf.FieldMask",
    "google.protobuf.StringValue",
    "google.protobuf.BytesValue",
}
_WRAPPED_SCALAR = {
    "google.protobuf.BoolValue": FieldDescriptor.TYPE_BOOL,
    "google.protobuf.Int32Value": FieldDescriptor.TYPE_INT32,
    "google.protobuf.Int64Value": FieldDescriptor.TYPE_INT64,
    "google.protobuf.UInt32Value": FieldDescriptor.TYPE_UINT32,
    "google.protobuf.UInt64Value": FieldDescriptor.TYPE_UINT64,
    "google.protobuf.FloatValue": FieldDescriptor.TYPE_FLOAT,
    "google.protobuf.DoubleValue": FieldDescriptor.TYPE_DOUBLE,
}
_INTS = {
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT32,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED32,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED32,
    FieldDescriptor.TYPE_SFIXED64,
}
MAX_PARAMETERS = 100


def _repeated(field: FieldDescriptor) -> bool:
    repeated = getattr(field, "is_repeated", None)
    return bool(repeated) if repeated is not None else field.label == field.LABEL_REPEATED


def _field(descriptor: Descriptor, name: str) -> FieldDescriptor | None:
    return descriptor.fields_by_name.get(name) or descriptor.fields_by_camelcase_name.get(name)


def _path(descriptor: Descriptor, dotted: str, where: str) -> list[FieldDescriptor]:
    """The fields ``dotted`` names from ``descriptor`` down; InputError if one does not exist."""
    fields: list[FieldDescriptor] = []
    current: Descriptor | None = descriptor
    for part in dotted.split("."):
        field = _field(current, part) if current is not None else None
        if field is None or (fields and _repeated(fields[-1])):
            raise InputError.of(
                where,
                f"Invalid JSON payload received. Unknown name {dotted!r}: Cannot bind query "
                f"parameter. Field {part!r} could not be found in request message.",
            )
        fields.append(field)
        current = field.message_type
    return fields


def _scalar(field_type: int, text: str, name: str) -> Any:
    try:
        if field_type in _INTS:
            return int(text)
        if field_type in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
            return float(text)
        if field_type == FieldDescriptor.TYPE_BOOL:
            if text not in ("true", "false"):
                raise ValueError(text)
            return text == "true"
    except ValueError:
        raise InputError.of(
            name, f"Invalid value at {name!r}: {text!r}; accepted: a value of the field's type"
        ) from None
    return text


def _query_value(field: FieldDescriptor, text: str, name: str) -> Any:
    message = field.message_type
    if message is None:
        if field.type == FieldDescriptor.TYPE_ENUM:
            return int(text) if text.lstrip("-").isdigit() else text
        return _scalar(field.type, text, name)
    full = message.full_name
    if full in _WRAPPED_AS_STRING:
        return text
    if full in _WRAPPED_SCALAR:
        return _scalar(_WRAPPED_SCALAR[full], text, name)
    raise InputError.of(
        name,
        f"{text!r}: a message field cannot be given as a query parameter; accepted: its fields",
    )


def _set(tree: dict[str, Any], fields: list[FieldDescriptor], value: Any, append: bool) -> None:
    for field in fields[:-1]:
        tree = tree.setdefault(field.name, {})
    last = fields[-1].name
    if append:
        tree.setdefault(last, []).append(value)
    else:
        tree[last] = value


def parse_body(raw: bytes, where: str) -> Any:
    """A JSON body; InputError when it is not JSON."""
    if not raw.strip():
        return {}
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise InputError.of(where, f"Invalid JSON payload received. {err}") from None


_UNKNOWN = re.compile(r'has no field named "([^"]+)" at "([^"]+)"')
_AT = re.compile(r'at "([^"]+)"')


def _payload_error(text: str) -> str:
    """protobuf's parse error in the words of Google's front end: ``Invalid JSON payload
    received. Unknown name "foo" at 'custom_job.job_spec': Cannot find field.``"""
    unknown = _UNKNOWN.search(text)
    if unknown is not None:
        at = unknown.group(2).split(".", 1)[1] if "." in unknown.group(2) else ""
        where = f" at '{at}'" if at else ""
        name = unknown.group(1)
        return f'Invalid JSON payload received. Unknown name "{name}"{where}: Cannot find field.'
    last = text.split("\n")[0].rsplit("Failed to parse ", 1)[-1]
    return f"Invalid JSON payload received. {last}"


def _merge(data: Any, message: Message, where: str) -> None:
    if not isinstance(data, dict):
        raise InputError.of(
            where, f"Invalid JSON payload received. Expected an object, got {type(data).__name__}"
        )
    try:
        json_format.ParseDict(data, message)
    except json_format.ParseError as err:
        raise InputError.of(where, _payload_error(str(err))) from None


def build(
    message: Message,
    body_field: str,
    body: bytes,
    path_values: dict[str, str],
    query: Iterable[tuple[str, str]],
) -> Message:
    """Fill ``message`` (an empty raw request) from the HTTP request; returns it."""
    descriptor = message.DESCRIPTOR
    data = parse_body(body, body_field or "body")
    if body_field == "*":
        _merge(data, message, "body")
    elif body_field:
        field = _field(descriptor, body_field)
        if field is None:
            raise InputError.of(body_field, "the rule's body field is not in the request")
        if field.message_type is not None and not isinstance(data, dict):
            raise InputError.of(
                body_field,
                f"Invalid JSON payload received. Expected an object, got {type(data).__name__}",
            )
        _merge({field.name: data}, message, body_field)
    elif data:
        raise InputError.of("body", "this method takes no body; accepted: an empty body")
    tree: dict[str, Any] = {}
    params = list(query)
    if len(params) > MAX_PARAMETERS:
        raise InputError.of(
            "query", f"{len(params)} parameters; accepted: at most {MAX_PARAMETERS}"
        )
    for name, value in params:
        if name in SYSTEM_PARAMETERS:
            continue
        fields = _path(descriptor, name, name)
        _set(tree, fields, _query_value(fields[-1], value, name), _repeated(fields[-1]))
    for dotted, value in path_values.items():
        fields = _path(descriptor, dotted, dotted)
        _set(tree, fields, value, False)
    if tree:
        _merge(tree, message, "query")
    return message


def render(response: Message, int_enums: bool = False) -> bytes:
    """``response`` as Google's REST answers it: JSON, camelCase, two-space indent."""
    text = json_format.MessageToJson(response, use_integers_for_enums=int_enums, indent=2)
    return text.encode("utf-8")


def wants_int_enums(query: Iterable[tuple[str, str]]) -> bool:
    """Whether ``$alt`` asks for enums as numbers (``json;enum-encoding=int``)."""
    return any(k in ("$alt", "alt") and "enum-encoding=int" in v for k, v in query)
