"""``google.api.serviceusage.v1.ServiceUsage``: enabling Google APIs on a project, recorded.

Google's training notebooks start with ``gcloud services enable aiplatform.googleapis.com
artifactregistry.googleapis.com``; under ``trainpool exec`` that reaches this service (the
REST door, ``serviceusage.googleapis.com``). EnableService, DisableService,
BatchEnableServices, GetService, ListServices and BatchGetServices are served; which
services a project has enabled is kept in the root's SQLite file (table
``enabled_services``), so a restarted emulator still lists them. Nothing else depends on it:
the emulator serves its APIs whether or not a project enabled them.

As the API says (https://cloud.google.com/service-usage/docs/reference/rest/v1/services):

- names are ``projects/PROJECT/services/SERVICE`` ("The ``EnableService`` and
  ``DisableService`` methods currently only support projects"); a SERVICE that is not a
  Google API's name (``*.googleapis.com``) is refused, INVALID_ARGUMENT naming it;
- Enable, Disable and BatchEnable answer an Operation (``operations/...``, polled with
  ``google.longrunning.Operations``, GET ``/v1/operations/*``) that is already done, its
  response an ``EnableServiceResponse``, ``DisableServiceResponse`` or
  ``BatchEnableServicesResponse`` holding the Service(s) in their new state;
- BatchEnable takes at most :data:`MAX_BATCH_ENABLE` services ("If more than 20 services
  are specified, the request will fail, and no state changes will occur"), BatchGet at most
  :data:`MAX_BATCH_GET` ("A single request can get a maximum of 30 services at a time");
- ListServices' filter is ``state:ENABLED`` or ``state:DISABLED`` ("The allowed filter
  strings are ``state:ENABLED`` and ``state:DISABLED``"; gcloud's ``services list
  --enabled`` sends the first); without one it lists every service the emulator knows of
  (:data:`TITLES`) and every one the project enabled, each with its state. A page holds
  at most :data:`MAX_PAGE_SIZE` ("Requested page size cannot exceed 200. If not set, the
  default page size is 50"), in the order of the services' names.

Where the emulator differs: Google names the project by its number in the answers
(``projects/123/services/...``); here the answers name it as the request did. Google
refuses a service that does not exist; here any ``*.googleapis.com`` name is accepted, its
title empty unless :data:`TITLES` knows it.
"""

from __future__ import annotations

import re

from google.cloud.service_usage_v1.types import resources
from google.cloud.service_usage_v1.types import serviceusage as su
from google.longrunning import operations_pb2

from trainpool.emulator.api.requests import PROJECT
from trainpool.emulator.api.rpc import Service, service
from trainpool.emulator.records import paging
from trainpool.emulator.records.database import Database
from trainpool.emulator.records.operations import pack
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError, brief

SERVICE = "google.api.serviceusage.v1.ServiceUsage"
MAX_BATCH_ENABLE = 20
MAX_BATCH_GET = 30
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
TITLES = {
    "aiplatform.googleapis.com": "Vertex AI API",
    "artifactregistry.googleapis.com": "Artifact Registry API",
    "bigquery.googleapis.com": "BigQuery API",
    "cloudbuild.googleapis.com": "Cloud Build API",
    "cloudresourcemanager.googleapis.com": "Cloud Resource Manager API",
    "compute.googleapis.com": "Compute Engine API",
    "containerregistry.googleapis.com": "Container Registry API",
    "iam.googleapis.com": "Identity and Access Management (IAM) API",
    "logging.googleapis.com": "Cloud Logging API",
    "monitoring.googleapis.com": "Cloud Monitoring API",
    "notebooks.googleapis.com": "Notebooks API",
    "serviceusage.googleapis.com": "Service Usage API",
    "storage.googleapis.com": "Cloud Storage API",
}
"""The services ListServices lists without a filter (each DISABLED until enabled), and
their titles as Google's ``config.title`` gives them (``gcloud services list`` prints it)."""
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
SERVICE_ID = re.compile(rf"(?=.{{1,253}}$)(?:{_LABEL}\.)+googleapis\.com")
PARENT = re.compile(rf"projects/({PROJECT})")
_SERVICE_ACCEPTED = "a Google API's service name, such as aiplatform.googleapis.com"
_FILTERS = {"": None, "state:ENABLED": True, "state:DISABLED": False}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS enabled_services (
  project TEXT NOT NULL,
  service TEXT NOT NULL,
  PRIMARY KEY (project, service)
);
"""


class EnabledServices:
    """Which services each project (``projects/P``, as the requests name it) has enabled,
    kept in the emulator's database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        db.executescript(_SCHEMA)

    def enable(self, parent: str, services: list[str]) -> None:
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO enabled_services (project, service) VALUES (?, ?)",
                [(parent, s) for s in services],
            )

    def disable(self, parent: str, service_id: str) -> None:
        self.db.execute(
            "DELETE FROM enabled_services WHERE project = ? AND service = ?",
            (parent, service_id),
        )

    def of(self, parent: str) -> set[str]:
        rows = self.db.read("SELECT service FROM enabled_services WHERE project = ?", (parent,))
        return {row["service"] for row in rows}


def check_parent(parent: str, field: str = "parent") -> str:
    """``projects/PROJECT`` (a project ID or number); INVALID_ARGUMENT otherwise."""
    if PARENT.fullmatch(parent) is None:
        raise InputError.of(
            field,
            f"{brief(parent)} is not a project; accepted: projects/PROJECT, PROJECT a project "
            "ID or number (Service Usage's enable, disable and batch methods only support "
            "projects)",
        )
    return parent


def check_service_id(service_id: str, field: str) -> str:
    if SERVICE_ID.fullmatch(service_id) is None:
        raise InputError.of(
            field, f"{brief(service_id)} is not a service name; accepted: {_SERVICE_ACCEPTED}"
        )
    return service_id


def split_name(name: str, field: str = "name") -> tuple[str, str]:
    """``(projects/P, SERVICE)`` of ``projects/P/services/SERVICE``, each checked."""
    parent, sep, service_id = name.partition("/services/")
    if not sep:
        raise InputError.of(
            field,
            f"{brief(name)} is not a service's name; accepted: "
            f"projects/PROJECT/services/SERVICE, SERVICE {_SERVICE_ACCEPTED}",
        )
    return check_parent(parent, field), check_service_id(service_id, field)


def service_of(parent: str, service_id: str, enabled: bool) -> resources.Service:
    """The Service ``service_id`` of ``parent`` in its state."""
    return resources.Service(
        name=f"{parent}/services/{service_id}",
        parent=parent,
        config=resources.ServiceConfig(name=service_id, title=TITLES.get(service_id, "")),
        state=resources.State.ENABLED if enabled else resources.State.DISABLED,
    )


class ServiceUsage:
    """The ServiceUsage methods of one emulator."""

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.enabled = EnabledServices(state.db)

    def finished(self, resource_names: list[str], response: object) -> operations_pb2.Operation:
        """A done Operation named as Service Usage names them (``operations/...``: gcloud
        polls ``GET /v1/{name=operations/*}``), kept for GetOperation."""
        name = f"operations/serviceusage-{self.state.new_id('operation')}"
        metadata = pack(resources.OperationMetadata(resource_names=resource_names))
        operation = operations_pb2.Operation(
            name=name, done=True, metadata=metadata, response=pack(response)
        )
        return self.state.operations.save(operation)

    def enable(self, request: su.EnableServiceRequest) -> operations_pb2.Operation:
        parent, service_id = split_name(request.name)
        self.enabled.enable(parent, [service_id])
        found = service_of(parent, service_id, True)
        return self.finished([found.name], su.EnableServiceResponse(service=found))

    def disable(self, request: su.DisableServiceRequest) -> operations_pb2.Operation:
        parent, service_id = split_name(request.name)
        self.enabled.disable(parent, service_id)
        found = service_of(parent, service_id, False)
        return self.finished([found.name], su.DisableServiceResponse(service=found))

    def batch_enable(self, request: su.BatchEnableServicesRequest) -> operations_pb2.Operation:
        parent = check_parent(request.parent)
        ids = list(dict.fromkeys(request.service_ids))
        if not ids or len(ids) > MAX_BATCH_ENABLE:
            raise InputError.of(
                "service_ids",
                f"{len(ids)} services; accepted: 1 to {MAX_BATCH_ENABLE} service names "
                "(a single request can enable a maximum of 20 services at a time)",
            )
        for i, service_id in enumerate(ids):
            check_service_id(service_id, f"service_ids[{i}]")
        self.enabled.enable(parent, ids)
        found = [service_of(parent, s, True) for s in ids]
        return self.finished(
            [s.name for s in found], su.BatchEnableServicesResponse(services=found)
        )

    def get(self, request: su.GetServiceRequest) -> resources.Service:
        parent, service_id = split_name(request.name)
        return service_of(parent, service_id, service_id in self.enabled.of(parent))

    def batch_get(self, request: su.BatchGetServicesRequest) -> su.BatchGetServicesResponse:
        parent = check_parent(request.parent)
        if not request.names or len(request.names) > MAX_BATCH_GET:
            raise InputError.of(
                "names",
                f"{len(request.names)} names; accepted: 1 to {MAX_BATCH_GET} service names "
                f"under {parent}",
            )
        on = self.enabled.of(parent)
        found = []
        for i, name in enumerate(request.names):
            owner, service_id = split_name(name, f"names[{i}]")
            if owner != parent:
                raise InputError.of(f"names[{i}]", f"{brief(name)} is not under parent {parent!r}")
            found.append(service_of(parent, service_id, service_id in on))
        return su.BatchGetServicesResponse(services=found)

    def list_services(self, request: su.ListServicesRequest) -> su.ListServicesResponse:
        parent = check_parent(request.parent)
        wanted = _filter(request.filter)
        size = paging.page_size(request.page_size) if request.page_size else DEFAULT_PAGE_SIZE
        size = min(size, MAX_PAGE_SIZE)
        start = paging.page_after(request.page_token)
        on = self.enabled.of(parent)
        if wanted is None:
            ids = sorted(set(TITLES) | on)
        else:
            ids = sorted(on if wanted else set(TITLES) - on)
        page = ids[start : start + size]
        token = str(start + size) if start + size < len(ids) else ""
        return su.ListServicesResponse(
            services=[service_of(parent, s, s in on) for s in page], next_page_token=token
        )


def handler(state: EmulatorState) -> Service:
    """The ServiceUsage handler: :class:`ServiceUsage`'s methods. Not the standard methods
    of :mod:`trainpool.emulator.standard_methods`: a project's services are not created or
    deleted but enabled and disabled, and Get and List read a fixed catalog."""
    usage = ServiceUsage(state)
    op = operations_pb2.Operation
    return service(
        SERVICE,
        {
            "EnableService": (usage.enable, su.EnableServiceRequest, op),
            "DisableService": (usage.disable, su.DisableServiceRequest, op),
            "BatchEnableServices": (usage.batch_enable, su.BatchEnableServicesRequest, op),
            "GetService": (usage.get, su.GetServiceRequest, resources.Service),
            "ListServices": (usage.list_services, su.ListServicesRequest, su.ListServicesResponse),
            "BatchGetServices": (
                usage.batch_get,
                su.BatchGetServicesRequest,
                su.BatchGetServicesResponse,
            ),
        },
    )


def _filter(text: str) -> bool | None:
    """True: enabled services only; False: disabled ones; None: all."""
    key = re.sub(r"\s+", "", text)
    if key not in _FILTERS:
        raise InputError.of(
            "filter", f"{brief(text)} is not understood; accepted: state:ENABLED, state:DISABLED"
        )
    return _FILTERS[key]
