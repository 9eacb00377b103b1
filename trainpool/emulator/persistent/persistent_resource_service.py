"""``google.cloud.aiplatform.v1.PersistentResourceService``: the reserved clusters jobs run on.

CreatePersistentResource, GetPersistentResource, ListPersistentResources,
UpdatePersistentResource (``display_name`` and ``labels``), DeletePersistentResource and
RebootPersistentResource; the operations are long-running, done when the resource gets where
they take it (:mod:`trainpool.emulator.persistent.resources`: states, reboot and delete rules
with their sources; :mod:`trainpool.emulator.persistent.rules`: what a resource and a job on it
must hold). Create, Get, List, Update and Delete are :mod:`trainpool.emulator.standard_methods`
(the resource declared to it, kept by :class:`PersistentResources`); Reboot is written here: it
is no standard method (AIP-136, a custom one) and takes a RUNNING resource through REBOOTING.
"""

from __future__ import annotations

import os
from typing import Any

from google.cloud.aiplatform_v1.types import operation as op_types
from google.cloud.aiplatform_v1.types import persistent_resource as pr
from google.cloud.aiplatform_v1.types import persistent_resource_service as prs
from google.longrunning import operations_pb2

from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import Service, already_exists, service
from trainpool.emulator.persistent import rules
from trainpool.emulator.persistent.resources import KIND, Lives, resource_name
from trainpool.emulator.records.kinds import Kind
from trainpool.emulator.records.resources import AlreadyExists
from trainpool.emulator.standard_methods import Resource, methods
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError

SERVICE = "google.cloud.aiplatform.v1.PersistentResourceService"
UPDATABLE = ("display_name", "labels")
"""The fields UpdatePersistentResource changes here (pools are not resized locally)."""


def check_resource(resource: Any, field: str, creating: bool, allow_unknown: bool) -> None:
    """A resource to create: its display name, labels, text and pools (unknown machine types
    with ``allow_unknown``), and no Ray; an update's fields are checked once its mask is read
    (:meth:`PersistentResources.update`)."""
    if not creating:
        return
    if resource.display_name:
        requests.check_display_name(resource.display_name, f"{field}.display_name")
    requests.check_labels(resource.labels, f"{field}.labels")
    requests.check_no_nul(type(resource).to_dict(resource), field)
    rules.check_pools(resource, allow_unknown=allow_unknown)
    runtime = resource.resource_runtime_spec
    if "resource_runtime_spec" in resource and "ray_spec" in runtime:
        raise InputError.of(
            f"{field}.resource_runtime_spec.ray_spec",
            "is not emulated (no Ray cluster is started locally); accepted: no ray_spec "
            "(a resource whose pools training jobs run on)",
        )


class PersistentResources:
    """The emulator's :class:`Lives` as the standard methods call them: read settled,
    deleted by STOPPING first."""

    def __init__(self, state: EmulatorState, lives: Lives) -> None:
        self.state = state
        self.lives = lives

    def create(self, kind: Kind, parent: str, resource_id: str, resource: Any, field: str) -> Any:
        try:
            return self.lives.create(parent, resource_id, resource)
        except AlreadyExists as err:
            name = resource_name(parent, resource_id)
            raise already_exists(f"PersistentResource {name} already exists.") from err

    def require(self, kind: Kind, name: str) -> Any:
        return self.lives.get(name)

    def page(self, kind: Kind, parent: str, **query: Any) -> tuple[list[Any], str]:
        found, token = self.state.records.page(KIND, parent, **query)
        return [s for s in (self.lives.settle(r) for r in found) if s is not None], token

    def update(self, kind: Kind, given: Any, request: Any) -> Any:
        paths = list(request.update_mask.paths)
        check_update(given, paths)
        self.lives.get(given.name)

        def change(record: Any) -> None:
            if "display_name" in paths:
                record.display_name = given.display_name
            if "labels" in paths:
                record.labels.clear()
                record.labels.update(given.labels)

        return self.state.records.update(KIND, given.name, change)

    def delete(self, kind: Kind, request: Any) -> None:
        self.lives.delete(request.name)


def check_update(given: pr.PersistentResource, paths: list[str]) -> None:
    """INVALID_ARGUMENT unless ``paths`` (the update mask's) name some of :data:`UPDATABLE`
    and ``given`` holds valid values for them."""
    if not paths:
        raise InputError.of("update_mask", f"empty; accepted: {', '.join(UPDATABLE)}")
    for path in paths:
        if path not in UPDATABLE:
            raise InputError.of(
                "update_mask.paths",
                f"{path!r} is not updated by the emulator; accepted: {', '.join(UPDATABLE)}",
            )
    if "display_name" in paths:
        requests.check_display_name(given.display_name, "persistent_resource.display_name")
    if "labels" in paths:
        requests.check_labels(given.labels, "persistent_resource.labels")


def handler(state: EmulatorState, lives: Lives) -> Service:
    """The PersistentResourceService handler, over the emulator's persistent resources."""

    def check_name(name: str, field: str) -> None:
        requests.check_name(name, KIND.collection)  # its errors name "name", as before

    def check_id(resource_id: str, field: str) -> None:
        rules.check_id(resource_id, field)

    allow_unknown = os.environ.get(requests.ALLOW_UNKNOWN_ENV) == "1"

    def checked(resource: Any, field: str, creating: bool) -> None:
        check_resource(resource, field, creating, allow_unknown)

    def operation(metadata_type: Any) -> Any:
        return lambda name, response: lives.operation(name, metadata_type)

    def reboot(request: prs.RebootPersistentResourceRequest) -> operations_pb2.Operation:
        requests.check_name(request.name, KIND.collection)
        return lives.reboot(request.name)

    declared = Resource(
        KIND,
        PersistentResources(state, lives),
        requests.check_parent,
        check_name,
        checked,
        resource_id=check_id,
        operations=("Create", "Update", "Delete"),
        queries=(),  # the List request has no filter or order_by
    )
    table = methods(
        prs,
        {
            "Create": operation(prs.CreatePersistentResourceOperationMetadata),
            "Update": operation(prs.UpdatePersistentResourceOperationMetadata),
            "Delete": operation(op_types.DeleteOperationMetadata),
        },
        declared,
    )
    table["RebootPersistentResource"] = (
        reboot,
        prs.RebootPersistentResourceRequest,
        operations_pb2.Operation,
    )
    return service(SERVICE, table)
