"""Google's standard methods, written once for every service that keeps resources.

Get (https://google.aip.dev/131), List (https://google.aip.dev/132), Create
(https://google.aip.dev/133), Update (https://google.aip.dev/134) and Delete
(https://google.aip.dev/135) read the same request fields and answer the same way for
every resource: a service declares each of its resources as a :class:`Resource` (its
kind, its records, the checks of its parent's name, its own name and its fields, which
methods it has and which of them answer a long-running Operation) and takes the methods
from :func:`methods`, ready for :func:`trainpool.emulator.api.rpc.service`.

What a method does, in order (each step is the declaration's, so a service keeps its own
words and its own rules):

- ``Create<Noun>``: the parent's name (field ``parent``); the id (``<field>_id``) when
  the declaration checks ids itself; the resource's fields (``creating=True``); then
  :meth:`ResourceRecords.create`. With ``"Create"`` in ``operations`` it answers a done Operation
  whose response is the created resource.
- ``Get<Noun>``: the name (field ``name``), then :meth:`ResourceRecords.require` (NOT_FOUND).
- ``List<Plural>``: the parent's name, then :meth:`ResourceRecords.page` with ``page_size``,
  ``page_token`` and the request fields of ``queries`` (``filter``, ``order_by``); the
  response holds them as ``<plural field>`` and ``next_page_token``. A ``read_mask`` is
  applied by :meth:`trainpool.emulator.api.rpc.Service.call` for every door.
- ``Update<Noun>``: the resource's name (field ``<field>.name``), its fields
  (``creating=False``), then :meth:`ResourceRecords.update`, which reads the request's
  ``update_mask`` by the records' rules (their updatable fields).
- ``Delete<Noun>``: the name, then :meth:`ResourceRecords.delete`; a done Operation (response
  ``Empty``) with ``"Delete"`` in ``operations``, else ``Empty``.

Request and response types are found by name in the service's types module
(``Create<Noun>Request``, ``List<Plural>Response``): ``Noun`` is the resource message's
name, ``field`` its snake_case (``TensorboardTimeSeries``, ``tensorboard_time_series``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from google.longrunning import operations_pb2
from google.protobuf import empty_pb2

from trainpool.emulator.records.kinds import Kind

VERBS = ("Create", "Get", "List", "Update", "Delete")
Check = Callable[[str, str], None]
"""A name's check: ``(value, field)``, raising ``InputError`` naming ``field``."""
Operation = Callable[[str, Any], Any]
"""``(resource name, response or None) -> an Operation`` kept for polling: done at once, or
(PersistentResources) once the resource gets where the method takes it."""


class ResourceRecords(Protocol):
    """The records in which a service keeps one kind of resource, as the standard methods
    call them."""

    def create(self, kind: Kind, parent: str, resource_id: str, resource: Any, field: str) -> Any:
        """Keep ``resource`` under ``parent`` (``resource_id`` empty: the records pick one;
        ``field`` names the id in its errors); the stored resource."""

    def require(self, kind: Kind, name: str) -> Any:
        """The stored resource ``name``; NOT_FOUND when there is none."""

    def page(self, kind: Kind, parent: str, **query: Any) -> tuple[list[Any], str]:
        """A page of ``parent``'s resources and the next page token; ``query`` holds
        ``page_size``, ``page_token`` and the declared ``queries``."""

    def update(self, kind: Kind, resource: Any, request: Any) -> Any:
        """``resource``'s fields that Update ``request`` names, stored; the updated one."""

    def delete(self, kind: Kind, request: Any) -> None:
        """Delete the resource Delete ``request`` names."""


def _no_check(resource: Any, field: str, creating: bool) -> None:
    """A resource whose fields its records alone check."""


@dataclass(frozen=True)
class Resource:
    """One kind of resource of a service, declared to the standard methods."""

    kind: Kind
    records: ResourceRecords
    parent: Check
    """The parent's name: Create's and List's ``parent``."""
    name: Check
    """The resource's name: Get's and Delete's ``name``, Update's ``<field>.name``."""
    fields: Callable[[Any, str, bool], None] = _no_check
    """``(resource, field, creating)``: the fields Create and Update are given."""
    resource_id: Check | None = None
    """Create's ``<field>_id``, checked before the fields (None: the records check it)."""
    ids: bool = True
    """Create takes ``<field>_id`` (False: the records name every resource)."""
    verbs: tuple[str, ...] = VERBS
    operations: tuple[str, ...] = ()
    """Which of Create, Update and Delete answer a done Operation."""
    queries: tuple[str, ...] = ("filter", "order_by")
    """The List request's fields the records are given beside the page's."""
    plural: str = ""
    """The plural noun of List (``Repositories``); ``Noun + s`` when empty."""

    @property
    def noun(self) -> str:
        return str(self.kind.message.__name__)

    @property
    def field(self) -> str:
        return snake(self.noun)

    @property
    def plural_noun(self) -> str:
        return self.plural or f"{self.noun}s"


def snake(name: str) -> str:
    """``TensorboardTimeSeries`` -> ``tensorboard_time_series``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def methods(
    types: ModuleType, operation: Operation | Mapping[str, Operation], *resources: Resource
) -> dict[str, tuple[Callable[[Any], Any], Any, Any]]:
    """``{method: (function, RequestType, ResponseType)}`` of every declared method of
    ``resources``; request and response types from ``types``; ``operation`` makes the
    Operations: one maker for every verb, or one per verb (``{"Create": ..., "Delete":
    ...}``) where their metadata differ."""
    table: dict[str, tuple[Callable[[Any], Any], Any, Any]] = {}
    for resource in resources:
        for verb in resource.verbs:
            name = f"{verb}{resource.plural_noun if verb == 'List' else resource.noun}"
            answer = _answer(types, resource, verb)
            if verb == "List":
                function = list_(resource, answer)
            else:
                function = _MAKERS[verb](resource, _maker(operation, resource, verb))
            table[name] = (function, getattr(types, f"{name}Request"), answer)
    return table


def _maker(
    operation: Operation | Mapping[str, Operation], resource: Resource, verb: str
) -> Operation:
    """The maker of ``verb``'s Operations (a KeyError when one is declared and not given)."""
    if not isinstance(operation, Mapping):
        return operation
    if verb in resource.operations:
        return operation[verb]
    return _unused


def _unused(name: str, response: Any) -> Any:
    """A verb without an Operation never calls its maker."""
    raise AssertionError(f"{name}: this method answers no Operation")


def _answer(types: ModuleType, resource: Resource, verb: str) -> Any:
    """The response type of ``verb`` for ``resource``."""
    if verb in resource.operations:
        return operations_pb2.Operation
    if verb == "List":
        return getattr(types, f"List{resource.plural_noun}Response")
    return empty_pb2.Empty if verb == "Delete" else resource.kind.message


def create(resource: Resource, operation: Operation) -> Callable[[Any], Any]:
    """Create (AIP-133)."""
    field = resource.field
    id_field = f"{field}_id" if resource.ids else "name"

    def create_resource(request: Any) -> Any:
        resource.parent(request.parent, "parent")
        given = getattr(request, field)
        resource_id = getattr(request, id_field) if resource.ids else ""
        if resource.resource_id is not None:
            resource.resource_id(resource_id, id_field)
        resource.fields(given, field, True)
        created = resource.records.create(
            resource.kind, request.parent, resource_id, given, id_field
        )
        return operation(created.name, created) if "Create" in resource.operations else created

    return create_resource


def get(resource: Resource, operation: Operation) -> Callable[[Any], Any]:
    """Get (AIP-131)."""

    def get_resource(request: Any) -> Any:
        resource.name(request.name, "name")
        return resource.records.require(resource.kind, request.name)

    return get_resource


def list_(resource: Resource, response_type: Any) -> Callable[[Any], Any]:
    """List (AIP-132): a page, filtered and ordered as the records read ``queries``,
    answered as ``response_type``."""

    def list_resources(request: Any) -> Any:
        resource.parent(request.parent, "parent")
        query = {name: getattr(request, name) for name in resource.queries}
        items, token = resource.records.page(
            resource.kind,
            request.parent,
            page_size=request.page_size,
            page_token=request.page_token,
            **query,
        )
        return response_type(**{snake(resource.plural_noun): items, "next_page_token": token})

    return list_resources


def update(resource: Resource, operation: Operation) -> Callable[[Any], Any]:
    """Update (AIP-134): the fields the request's ``update_mask`` names, by the records."""
    field = resource.field

    def update_resource(request: Any) -> Any:
        given = getattr(request, field)
        resource.name(given.name, f"{field}.name")
        resource.fields(given, field, False)
        updated = resource.records.update(resource.kind, given, request)
        return operation(updated.name, updated) if "Update" in resource.operations else updated

    return update_resource


def delete(resource: Resource, operation: Operation) -> Callable[[Any], Any]:
    """Delete (AIP-135)."""

    def delete_resource(request: Any) -> Any:
        resource.name(request.name, "name")
        resource.records.delete(resource.kind, request)
        if "Delete" in resource.operations:
            return operation(request.name, None)
        return empty_pb2.Empty()

    return delete_resource


_MAKERS: dict[str, Callable[[Resource, Operation], Callable[[Any], Any]]] = {
    "Create": create,
    "Get": get,
    "Update": update,
    "Delete": delete,
}
