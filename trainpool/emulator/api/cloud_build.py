"""``google.devtools.cloudbuild.v1.CloudBuild``: CreateBuild, GetBuild, CancelBuild.

Builds run into the local image store (:mod:`trainpool.emulator.builds.local_builds`).
"""

from __future__ import annotations

import grpc
from google.cloud.devtools.cloudbuild_v1.types import cloudbuild as cb
from google.longrunning import operations_pb2
from google.protobuf import any_pb2

from trainpool.emulator.api.rpc import not_found, precondition, service
from trainpool.emulator.builds.local_builds import LocalBuilds
from trainpool.emulator.jobs.runner import Runner
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError

SERVICE = "google.devtools.cloudbuild.v1.CloudBuild"


def handler(state: EmulatorState, runner: Runner) -> grpc.GenericRpcHandler:
    """The CloudBuild handler; builds a previous server left running end FAILURE."""
    builds = LocalBuilds(state)
    builds.recover()

    def create(request: cb.CreateBuildRequest) -> operations_pb2.Operation:
        build = request.build
        if not request.project_id:
            raise InputError.of("project_id", "'' is empty; accepted: a project id")
        source = build.source.storage_source
        if not source.bucket or not source.object_:
            raise InputError.of(
                "build.source.storage_source",
                f"bucket={source.bucket!r} object={source.object_!r}; accepted: the gs:// "
                "bucket and object of a .tar.gz build context",
            )
        if not build.images:
            raise InputError.of("build.images", "[]; accepted: the image names the build pushes")
        build = builds.start(request.project_id, build)
        metadata = any_pb2.Any()
        metadata.Pack(cb.BuildOperationMetadata.pb(cb.BuildOperationMetadata(build=build)))
        name = f"projects/{build.project_id}/operations/{build.id}"
        return operations_pb2.Operation(name=name, metadata=metadata)

    def get(request: cb.GetBuildRequest) -> cb.Build:
        found = builds.get(request.project_id, request.id)
        if found is None:
            raise not_found(f"build {request.id!r} not found in project {request.project_id!r}")
        return found

    def cancel(request: cb.CancelBuildRequest) -> cb.Build:
        build = get(cb.GetBuildRequest(project_id=request.project_id, id=request.id))
        cancelled = builds.cancel(request.project_id, request.id)
        if cancelled is None:
            raise precondition(f"build {request.id} is already {build.status.name}")
        return cancelled

    return service(
        SERVICE,
        {
            "CreateBuild": (create, cb.CreateBuildRequest, operations_pb2.Operation),
            "GetBuild": (get, cb.GetBuildRequest, cb.Build),
            "CancelBuild": (cancel, cb.CancelBuildRequest, cb.Build),
        },
    )
