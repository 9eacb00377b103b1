"""``google.devtools.cloudbuild.v1.CloudBuild``: CreateBuild, GetBuild, CancelBuild.

A build fetches its source tarball from Cloud Storage (google-cloud-storage, so
``STORAGE_EMULATOR_HOST`` points it at a storage emulator), and builds it with
trainpool's local builder into the local image store under the names in
``Build.images`` ("pushed"): a CustomJob naming that image then runs from the
store. Only ``pip install -r`` runs; the build log lists the RUN steps that did
not. The log is ``<root>/builds/<id>/log.txt`` and ``Build.log_url`` points at it.

A build that was running when a previous server stopped (or crashed) has no
thread any more: on start it is recorded FAILURE, saying so, like a CustomJob.

``TRAINPOOL_EMULATOR_BUILD_HOLD_S`` (default 0) keeps each build QUEUED that many
seconds before it starts, so a demo or test can watch and cancel a queued build.
"""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
import threading
import uuid
from pathlib import Path

import grpc
from google.cloud.devtools.cloudbuild_v1.types import cloudbuild as cb
from google.longrunning import operations_pb2
from google.protobuf import any_pb2

from trainpool.emulator.rpc import invalid, not_found, precondition, unary
from trainpool.emulator.state import EmulatorState
from trainpool.images import context, local_store

SERVICE = "google.devtools.cloudbuild.v1.CloudBuild"
HOLD_ENV = "TRAINPOOL_EMULATOR_BUILD_HOLD_S"
Status = cb.Build.Status
RUNNING = (Status.PENDING, Status.QUEUED, Status.WORKING)
_TABLE = "CREATE TABLE IF NOT EXISTS builds (id TEXT PRIMARY KEY, project TEXT, data BLOB);"
RESTART_DETAIL = (
    "The emulator stopped while this build was running (server restart or crash); "
    "nothing was pushed. Create the build again to rerun it."
)


class CloudBuildService:
    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.hold_s = float(os.environ.get(HOLD_ENV, "0") or 0)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        state.db.executescript(_TABLE)
        state.on_stop(self._stopping.set)

    def _save(self, build: cb.Build) -> None:
        self.state.db.execute(
            "INSERT OR REPLACE INTO builds (id, project, data) VALUES (?, ?, ?)",
            (build.id, build.project_id, cb.Build.serialize(build)),
        )

    def _load(self, project: str, build_id: str) -> cb.Build:
        rows = self.state.db.execute(
            "SELECT data FROM builds WHERE id = ? AND project = ?", (build_id, project)
        )
        if not rows:
            raise not_found(f"build {build_id!r} not found in project {project!r}")
        return cb.Build.deserialize(rows[0]["data"])

    def _set(self, project: str, build_id: str, **fields: object) -> cb.Build | None:
        """Update a running build; None when it has ended (e.g. cancelled) meanwhile."""
        with self._lock:
            build = self._load(project, build_id)
            if build.status not in RUNNING:
                return None
            for key, value in fields.items():
                setattr(build, key, value)
            self._save(build)
            return build

    def create(self, request: cb.CreateBuildRequest) -> operations_pb2.Operation:
        build = request.build
        if not request.project_id:
            raise invalid("project_id: '' is empty; accepted: a project id")
        source = build.source.storage_source
        if not source.bucket or not source.object_:
            raise invalid(
                f"build.source.storage_source: bucket={source.bucket!r} object={source.object_!r}; "
                "accepted: the gs:// bucket and object of a .tar.gz build context"
            )
        if not build.images:
            raise invalid("build.images: []; accepted: the image names the build pushes")
        build.id = str(uuid.uuid4())
        build.project_id = request.project_id
        build.status = Status.QUEUED  # type: ignore[assignment]
        log_file = self.state.root / "builds" / build.id / "log.txt"
        log_file.parent.mkdir(parents=True, exist_ok=True)
        log_file.touch()
        build.log_url = log_file.as_uri()
        with self._lock:
            self._save(build)
        threading.Thread(target=self._run, args=(build, log_file), daemon=True).start()
        metadata = any_pb2.Any()
        metadata.Pack(cb.BuildOperationMetadata.pb(cb.BuildOperationMetadata(build=build)))
        name = f"projects/{build.project_id}/operations/{build.id}"
        return operations_pb2.Operation(name=name, metadata=metadata)

    def _run(self, build: cb.Build, log_file: Path) -> None:
        if self._stopping.wait(self.hold_s):
            return  # the server stops: the next one records this build FAILURE
        if self._set(build.project_id, build.id, status=Status.WORKING) is None:
            return
        with log_file.open("a") as log:
            try:
                digest, not_run = self._build(build, log)
            except Exception as err:  # a failed build is recorded, never raised
                log.write(f"ERROR: {err}\n")
                self._set(build.project_id, build.id, status=Status.FAILURE, status_detail=str(err))
                return
            log.write(f"RUN steps not executed by the local builder: {not_run or 'none'}\n")
            self._push(build, digest, log)

    def _push(self, build: cb.Build, digest: str, log: io.TextIOBase) -> None:
        """Tag the stored image with ``build.images`` and end SUCCESS, unless cancelled meanwhile.

        Under the lock that Cancel takes, so a build cancelled while it ran pushes nothing
        (as on Cloud Build): no job can then run from its image names.
        """
        with self._lock:
            current = self._load(build.project_id, build.id)
            if current.status not in RUNNING:
                log.write(f"build ended {current.status.name} while it ran: nothing pushed\n")
                return
            for image in build.images:
                local_store.tag(self.state.root, image, digest)
                log.write(f"pushed {image}@sha256:{digest}\n")
            log.write("DONE\n")
            current.status = Status.SUCCESS  # type: ignore[assignment]
            current.results = cb.Results(
                images=[cb.BuiltImage(name=i, digest=f"sha256:{digest}") for i in build.images]
            )
            self._save(current)

    def _build(self, build: cb.Build, log: io.TextIOBase) -> tuple[str, list[str]]:
        """Store the build's context as an image (not yet tagged); its digest and unrun steps."""
        from google.cloud import storage  # type: ignore[attr-defined]

        source = build.source.storage_source
        log.write(f"fetching gs://{source.bucket}/{source.object_}\n")
        blob = storage.Client(project=build.project_id).bucket(source.bucket).blob(source.object_)
        data = blob.download_as_bytes()
        build_args = {}
        for step in build.steps:
            for arg in step.args:
                if arg.startswith("--build-arg="):
                    key, _, value = arg.removeprefix("--build-arg=").partition("=")
                    build_args[key] = value
        with tempfile.TemporaryDirectory() as tmp:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                tar.extractall(tmp, filter="data")
            ctx = context.BuildContext.of(context.collect(Path(tmp), patterns=[]), build_args)
            log.write(f"building context sha256:{ctx.digest} into the local image store\n")
            not_run = local_store.add(ctx, self.state.root, [])
        return ctx.digest, not_run

    def recover(self) -> None:
        """Builds a previous server left running end FAILURE (their threads died with it)."""
        with self._lock:
            for row in self.state.db.execute("SELECT data FROM builds"):
                build = cb.Build.deserialize(row["data"])
                if build.status in RUNNING:
                    build.status = Status.FAILURE  # type: ignore[assignment]
                    build.status_detail = RESTART_DETAIL
                    self._save(build)

    def get(self, request: cb.GetBuildRequest) -> cb.Build:
        return self._load(request.project_id, request.id)

    def cancel(self, request: cb.CancelBuildRequest) -> cb.Build:
        with self._lock:
            build = self._load(request.project_id, request.id)
            if build.status not in RUNNING:
                raise precondition(f"build {request.id} is already {build.status.name}")
            build.status = Status.CANCELLED  # type: ignore[assignment]
            self._save(build)
        return build


def handler(state: EmulatorState) -> grpc.GenericRpcHandler:
    """The CloudBuild handler."""
    service = CloudBuildService(state)
    service.recover()
    ser_build = cb.Build.serialize
    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "CreateBuild": unary(
                service.create, cb.CreateBuildRequest, operations_pb2.Operation.SerializeToString
            ),
            "GetBuild": unary(service.get, cb.GetBuildRequest, ser_build),
            "CancelBuild": unary(service.cancel, cb.CancelBuildRequest, ser_build),
        },
    )
