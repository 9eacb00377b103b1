"""``google.devtools.cloudbuild.v1.CloudBuild``: CreateBuild, GetBuild, CancelBuild.

Builds run into the local image store (:mod:`trainpool.emulator.builds.build_runs`).
"""

from __future__ import annotations

import re

from google.cloud.devtools.cloudbuild_v1.types import cloudbuild as cb
from google.longrunning import operations_pb2
from google.protobuf import any_pb2

from trainpool.emulator.api.rpc import Service, not_found, precondition, service
from trainpool.emulator.builds.build_runs import RUNNING, BuildRunner
from trainpool.emulator.jobs.containers import ContainerEngine
from trainpool.emulator.records import paging
from trainpool.emulator.records.kinds import BUILDS
from trainpool.emulator.records.operations import pack
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError

SERVICE = "google.devtools.cloudbuild.v1.CloudBuild"
_BUILD_OPERATION = re.compile(r"projects/[^/]+/operations/[^/]+")


def project_of(project_id: str, parent: str, field: str = "project_id") -> str:
    """The project of a request that names it (``project_id``) or its ``parent``
    (``projects/P/locations/L``: the regional form gcloud uses)."""
    if project_id:
        return project_id
    parts = parent.split("/")
    if len(parts) == 4 and parts[0] == "projects" and parts[2] == "locations" and parts[1]:
        return parts[1]
    raise InputError.of(
        field, "'' is empty; accepted: a project id, or parent projects/PROJECT/locations/LOCATION"
    )


def build_of(project_id: str, build_id: str, name: str) -> tuple[str, str]:
    """``(project, build id)`` of a request that names them or its ``name``
    (``projects/P/locations/L/builds/ID``)."""
    if project_id and build_id:
        return project_id, build_id
    parts = name.split("/")
    if len(parts) == 6 and parts[0] == "projects" and parts[4] == "builds" and parts[5]:
        return parts[1], parts[5]
    raise InputError.of(
        "name",
        f"{name!r}; accepted: project_id and id, or projects/PROJECT/locations/LOCATION/builds/ID",
    )


class CloudBuild:
    """The methods of CloudBuild, over the emulator's :class:`BuildRunner`."""

    def __init__(self, state: EmulatorState, builds: BuildRunner) -> None:
        self.state = state
        self.builds = builds

    def create(self, request: cb.CreateBuildRequest) -> operations_pb2.Operation:
        build = request.build
        project = project_of(request.project_id, request.parent)
        source = build.source.storage_source
        if not source.bucket or not source.object_:
            raise InputError.of(
                "build.source.storage_source",
                f"bucket={source.bucket!r} object={source.object_!r}; accepted: the gs:// "
                "bucket and object of a .tar.gz build context",
            )
        if not build.images:
            raise InputError.of("build.images", "[]; accepted: the image names the build pushes")
        build = self.builds.start(project, build)
        metadata = any_pb2.Any()
        metadata.Pack(cb.BuildOperationMetadata.pb(cb.BuildOperationMetadata(build=build)))
        name = f"projects/{build.project_id}/operations/{build.id}"
        return self.state.operations.save(operations_pb2.Operation(name=name, metadata=metadata))

    def refresh(self, operation: operations_pb2.Operation) -> operations_pb2.Operation:
        """A build's operation is done once the build has ended, with the build as its
        response (Cloud Build's ``BuildOperationMetadata``/``Build``)."""
        _, project, _, build_id = operation.name.split("/")
        found = self.builds.get(project, build_id)
        if found is None or found.status in RUNNING:
            return operation
        metadata = any_pb2.Any()
        metadata.Pack(cb.BuildOperationMetadata.pb(cb.BuildOperationMetadata(build=found)))
        return operations_pb2.Operation(
            name=operation.name, metadata=metadata, done=True, response=pack(found)
        )

    def get(self, request: cb.GetBuildRequest) -> cb.Build:
        project, build_id = build_of(request.project_id, request.id, request.name)
        found = self.builds.get(project, build_id)
        if found is None:
            raise not_found(f"build {build_id!r} not found in project {project!r}")
        return found

    def cancel(self, request: cb.CancelBuildRequest) -> cb.Build:
        project, build_id = build_of(request.project_id, request.id, request.name)
        build = self.get(cb.GetBuildRequest(project_id=project, id=build_id))
        cancelled = self.builds.cancel(project, build_id)
        if cancelled is None:
            raise precondition(f"build {build_id} is already {build.status.name}")
        return cancelled

    def list_builds(self, request: cb.ListBuildsRequest) -> cb.ListBuildsResponse:
        """Newest first, as Cloud Build lists them (``gcloud builds list``)."""
        project = project_of(request.project_id, request.parent)
        if request.filter:
            raise InputError.of(
                "filter",
                f"{request.filter[:200]!r}: the emulator does not filter builds; accepted: '' "
                "(gcloud's --filter filters on the client)",
            )
        size = paging.page_size(request.page_size)
        start = paging.page_after(request.page_token)
        prefix = f"projects/{project}/builds/"
        names = [n for n in self.state.records.names(BUILDS) if n.startswith(prefix)][::-1]
        page = [self.builds.get(project, n.rsplit("/", 1)[1]) for n in names[start : start + size]]
        token = str(start + size) if start + size < len(names) else ""
        return cb.ListBuildsResponse(
            builds=[b for b in page if b is not None], next_page_token=token
        )


def handler(state: EmulatorState, engine: ContainerEngine | None) -> Service:
    """The CloudBuild handler; builds a previous server left running end FAILURE."""
    builds = BuildRunner(state, engine)
    builds.recover()
    served = CloudBuild(state, builds)
    state.operations.refresh_with(
        lambda name: bool(_BUILD_OPERATION.fullmatch(name)), served.refresh
    )
    return service(
        SERVICE,
        {
            "CreateBuild": (served.create, cb.CreateBuildRequest, operations_pb2.Operation),
            "ListBuilds": (served.list_builds, cb.ListBuildsRequest, cb.ListBuildsResponse),
            "GetBuild": (served.get, cb.GetBuildRequest, cb.Build),
            "CancelBuild": (served.cancel, cb.CancelBuildRequest, cb.Build),
        },
    )
