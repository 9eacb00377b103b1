"""Long-running operations the emulator answers done at once (Delete*, UploadModel, ...)."""

from __future__ import annotations

from typing import Any

from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2
from google.protobuf.message import Message


def done(name: str, response: Any = None) -> operations_pb2.Operation:
    """A finished ``Operation`` named ``name`` whose response is ``response`` (a protobuf or
    proto-plus message; ``Empty`` when None)."""
    message = response if response is not None else empty_pb2.Empty()
    if not isinstance(message, Message):
        message = type(message).pb(message)
    packed = any_pb2.Any()
    packed.Pack(message)
    return operations_pb2.Operation(name=name, done=True, response=packed)
