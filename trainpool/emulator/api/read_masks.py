"""A List request's ``read_mask``: each listed resource keeps only the fields it names.

Vertex's List requests (``ListCustomJobsRequest``, ``ListPipelineJobsRequest``,
``ListTensorboardsRequest``, ...) carry ``read_mask``, "Mask specifying which fields to read"
(the field's comment in ``google/cloud/aiplatform/v1/job_service.proto``), so a client that
asks for ``display_name,state`` gets resources with those fields set and every other field
empty. Applied once, in :meth:`trainpool.emulator.api.rpc.Service.call`, so every door and
both versions answer alike. A path the resource does not have is refused (INVALID_ARGUMENT)
naming it and the resource's fields, as a bad ``update_mask`` is.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import field_mask_pb2
from google.protobuf.descriptor import FieldDescriptor

from trainpool.errors import InputError, Problem

Tree = dict[str, "Tree"]
"""The mask's paths as a tree: ``{"job_detail": {"pipeline_context": {}}}``; ``{}`` under a
name keeps all of it."""


def _pb(message: Any) -> Any:
    """The protobuf behind a proto-plus message (a protobuf message is its own)."""
    return getattr(message, "_pb", message)


def requested(request: Any, response_type: Any) -> Tree | None:
    """The fields ``request.read_mask`` keeps of each resource a ``response_type`` lists, as
    a :data:`Tree`; None when there is nothing to cut (no mask, no path, or not a List).
    A path the resource lacks is refused here, before the method runs. A path may go into
    a ``Struct`` field by its keys (``pipeline_spec.pipeline_info``, as the SDK's
    ``PipelineJob.list`` asks)."""
    mask = _mask(request)
    if mask is None:
        return None
    listed = _listed_field(_pb(response_type()).DESCRIPTOR)
    if listed is None:
        return None
    resource = listed.message_type
    bad = [path for path in mask.paths if not _valid(resource, path.split("."))]
    if bad:
        fields = sorted(field.name for field in resource.fields)
        raise InputError(
            [
                Problem(
                    "read_mask",
                    f"{', '.join(bad)} is not a field of {resource.name}; "
                    f"accepted: {', '.join(fields)}",
                )
            ]
        )
    return _tree(list(mask.paths))


def apply(tree: Tree, response: Any) -> Any:
    """``response`` with each listed resource cut down to ``tree`` (:func:`requested`)."""
    message = _pb(response)
    listed = _listed_field(message.DESCRIPTOR)
    for item in getattr(message, listed.name):
        kept = type(item)()
        _keep(item, kept, tree)
        item.CopyFrom(kept)
    return response


def _tree(paths: list[str]) -> Tree:
    tree: Tree = {}
    for path in paths:
        node = tree
        parts = path.split(".")
        for i, part in enumerate(parts):
            if part in node and not node[part]:
                break  # a shorter path already keeps all of it
            node = node.setdefault(part, {})
            if i == len(parts) - 1:
                node.clear()
    return tree


def _is_struct(descriptor: Any) -> bool:
    return bool(descriptor.full_name == "google.protobuf.Struct")


def _valid(descriptor: Any, parts: list[str]) -> bool:
    """Whether ``parts`` name a field of ``descriptor`` (and, further, a field of that
    message, or any key of a ``Struct``)."""
    if _is_struct(descriptor):
        return True
    field = descriptor.fields_by_name.get(parts[0])
    if field is None:
        return False
    if len(parts) == 1:
        return True
    if field.type != FieldDescriptor.TYPE_MESSAGE or _repeated(field):
        return False
    return _valid(field.message_type, parts[1:])


def _keep(source: Any, target: Any, tree: Tree) -> None:
    """Copy into ``target`` what ``tree`` names of ``source``."""
    if _is_struct(source.DESCRIPTOR):
        for key, below in tree.items():
            if key not in source.fields:
                continue
            if below and source.fields[key].HasField("struct_value"):
                _keep(source.fields[key].struct_value, target.fields[key].struct_value, below)
            else:
                target.fields[key].CopyFrom(source.fields[key])
        return
    for name, below in tree.items():
        if not below:  # the whole field, as protobuf's own FieldMask copies it
            field_mask_pb2.FieldMask(paths=[name]).MergeMessage(source, target)
        elif source.HasField(name):  # a message, narrowed (checked: singular)
            _keep(getattr(source, name), getattr(target, name), below)


def _mask(request: Any) -> field_mask_pb2.FieldMask | None:
    message = _pb(request)
    if "read_mask" not in message.DESCRIPTOR.fields_by_name or not message.HasField("read_mask"):
        return None
    mask: field_mask_pb2.FieldMask = message.read_mask
    return mask if mask.paths else None


def _repeated(field: FieldDescriptor) -> bool:
    """``field.is_repeated`` (protobuf 6: ``label`` is deprecated), or its label before that."""
    repeated = getattr(field, "is_repeated", None)
    if repeated is None:
        return bool(field.label == FieldDescriptor.LABEL_REPEATED)
    return bool(repeated)


def _listed_field(descriptor: Any) -> Any:
    """A List response's one repeated message field (its resources), else None."""
    listed = [
        field
        for field in descriptor.fields
        if _repeated(field)
        and field.type == FieldDescriptor.TYPE_MESSAGE
        and not field.message_type.GetOptions().map_entry
    ]
    return listed[0] if len(listed) == 1 else None
