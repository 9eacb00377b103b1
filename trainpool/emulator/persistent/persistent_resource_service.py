"""``google.cloud.aiplatform.v1.PersistentResourceService``: the reserved clusters jobs run on.

CreatePersistentResource, GetPersistentResource, ListPersistentResources,
UpdatePersistentResource (``display_name`` and ``labels``), DeletePersistentResource and
RebootPersistentResource; the operations are long-running, done when the resource gets where
they take it (:mod:`trainpool.emulator.persistent.resources`: states, reboot and delete rules
with their sources; :mod:`trainpool.emulator.persistent.rules`: what a resource and a job on it
must hold).
"""

from __future__ import annotations

import os
from typing import Any

from google.cloud.aiplatform_v1.types import persistent_resource as pr
from google.cloud.aiplatform_v1.types import persistent_resource_service as prs
from google.longrunning import operations_pb2

from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import Service, already_exists, service
from trainpool.emulator.persistent import rules
from trainpool.emulator.persistent.resources import KIND, Lives, resource_name
from trainpool.emulator.records.resources import AlreadyExists
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError

SERVICE = "google.cloud.aiplatform.v1.PersistentResourceService"
UPDATABLE = ("display_name", "labels")
"""The fields UpdatePersistentResource changes here (pools are not resized locally)."""


class PersistentResourceService:
    """The methods of PersistentResourceService over the emulator's :class:`Lives`."""

    def __init__(self, state: EmulatorState, lives: Lives) -> None:
        self.state = state
        self.lives = lives
        self.allow_unknown = os.environ.get(requests.ALLOW_UNKNOWN_ENV) == "1"

    def create(self, request: prs.CreatePersistentResourceRequest) -> operations_pb2.Operation:
        requests.check_parent(request.parent)
        rules.check_id(request.persistent_resource_id)
        resource = request.persistent_resource
        if resource.display_name:
            requests.check_display_name(resource.display_name, "persistent_resource.display_name")
        requests.check_labels(resource.labels, "persistent_resource.labels")
        requests.check_no_nul(type(resource).to_dict(resource), "persistent_resource")
        rules.check_pools(resource, allow_unknown=self.allow_unknown)
        runtime = resource.resource_runtime_spec
        if "resource_runtime_spec" in resource and "ray_spec" in runtime:
            raise InputError.of(
                "persistent_resource.resource_runtime_spec.ray_spec",
                "is not emulated (no Ray cluster is started locally); accepted: no ray_spec "
                "(a resource whose pools training jobs run on)",
            )
        try:
            return self.lives.create(request)
        except AlreadyExists as err:
            name = resource_name(request.parent, request.persistent_resource_id)
            raise already_exists(f"PersistentResource {name} already exists.") from err

    def get(self, request: prs.GetPersistentResourceRequest) -> pr.PersistentResource:
        requests.check_name(request.name, KIND.collection)
        found: pr.PersistentResource = self.lives.get(request.name)
        return found

    def list(
        self, request: prs.ListPersistentResourcesRequest
    ) -> prs.ListPersistentResourcesResponse:
        requests.check_parent(request.parent)  # the request has no filter or order_by
        found, token = self.state.records.page(
            KIND, request.parent, page_size=request.page_size, page_token=request.page_token
        )
        settled = [s for s in (self.lives.settle(r) for r in found) if s is not None]
        return prs.ListPersistentResourcesResponse(
            persistent_resources=settled, next_page_token=token
        )

    def delete(self, request: prs.DeletePersistentResourceRequest) -> operations_pb2.Operation:
        requests.check_name(request.name, KIND.collection)
        return self.lives.delete(request.name)

    def reboot(self, request: prs.RebootPersistentResourceRequest) -> operations_pb2.Operation:
        requests.check_name(request.name, KIND.collection)
        return self.lives.reboot(request.name)

    def update(self, request: prs.UpdatePersistentResourceRequest) -> operations_pb2.Operation:
        given = request.persistent_resource
        requests.check_name(given.name, KIND.collection)
        paths = list(request.update_mask.paths)
        check_update(given, paths)
        self.lives.get(given.name)

        def change(record: Any) -> None:
            if "display_name" in paths:
                record.display_name = given.display_name
            if "labels" in paths:
                record.labels.clear()
                record.labels.update(given.labels)

        self.state.records.update(KIND, given.name, change)
        return self.lives.operation(given.name, prs.UpdatePersistentResourceOperationMetadata)


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
    resources = PersistentResourceService(state, lives)
    operation = operations_pb2.Operation
    return service(
        SERVICE,
        {
            "CreatePersistentResource": (
                resources.create,
                prs.CreatePersistentResourceRequest,
                operation,
            ),
            "GetPersistentResource": (
                resources.get,
                prs.GetPersistentResourceRequest,
                pr.PersistentResource,
            ),
            "ListPersistentResources": (
                resources.list,
                prs.ListPersistentResourcesRequest,
                prs.ListPersistentResourcesResponse,
            ),
            "UpdatePersistentResource": (
                resources.update,
                prs.UpdatePersistentResourceRequest,
                operation,
            ),
            "DeletePersistentResource": (
                resources.delete,
                prs.DeletePersistentResourceRequest,
                operation,
            ),
            "RebootPersistentResource": (
                resources.reboot,
                prs.RebootPersistentResourceRequest,
                operation,
            ),
        },
    )
