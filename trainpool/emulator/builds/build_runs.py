"""Cloud Build's builds, run locally into the local image store.

A build fetches its source tarball from Cloud Storage (google-cloud-storage, so
``STORAGE_EMULATOR_HOST`` points it at a storage emulator). Where a container engine
answers, it is built there, every step run (:mod:`.engine_builds`), and tagged with the
names in ``Build.images`` ("pushed"): a CustomJob naming one runs as containers of it.
Without an engine, or when a base image is one the engine cannot have (not pullable, no
stand-in: Vertex's prebuilt images here), trainpool's local builder stores it in the local
image store under those names, and a CustomJob naming one runs from the store; only
``pip install -r`` runs then, and the build log lists the RUN steps that did not. The log is
``<root>/builds/<id>/log.txt`` and ``Build.log_url`` points at it.

A build that was running when a previous server stopped (or crashed) has no thread any
more: on start it is recorded FAILURE, saying so, like a CustomJob.

``TRAINPOOL_EMULATOR_BUILD_HOLD_S`` (default 0) keeps each build QUEUED that many seconds
before it starts, so a demo or test can watch and cancel a queued build.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tarfile
import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.cloud.devtools.cloudbuild_v1.types import cloudbuild as cb

from trainpool.cluster_env.gcs import to_path
from trainpool.emulator.artifact_registry.repositories import (
    push_problem,
    read_image_name,
    record_push,
)
from trainpool.emulator.builds import engine_builds
from trainpool.emulator.jobs.containers import ContainerEngine
from trainpool.emulator.records.database import DiskFull, is_disk_full
from trainpool.emulator.records.kinds import BUILDS
from trainpool.emulator.state import EmulatorState
from trainpool.images import archives, context, image_store

HOLD_ENV = "TRAINPOOL_EMULATOR_BUILD_HOLD_S"
LOGS_FOLDER = "gs://{project}_cloudbuild/logs"
"""Where a build's log goes when the request names no logs bucket. Cloud Build's default is
``gs://[PROJECT_NUMBER].cloudbuild-logs.googleusercontent.com`` (Build.logs_bucket,
cloudbuild.proto), a name Cloud Storage keeps for Google ("cannot contain google"); the
emulator uses the bucket ``gcloud builds submit`` already made for the project's sources."""
Status = cb.Build.Status
RUNNING = (Status.PENDING, Status.QUEUED, Status.WORKING)
RESTART_DETAIL = (
    "The emulator ended while this build was running (server restart or crash); "
    "nothing was pushed. Create the build again to rerun it."
)


class BuildLog(io.TextIOBase):
    """A build's log file that keeps what the disk takes: the first write or flush the disk
    refuses is kept in ``lost`` (the build then fails naming the disk) and nothing more is
    written; a full disk never leaves a build WORKING for an exception its log raised."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.lost: OSError | None = None
        self._file = path.open("a")

    def _guarded(self, act: Callable[[], object]) -> None:
        if self.lost is not None:
            return
        try:
            act()
        except OSError as err:
            err.filename = err.filename or str(self._file.name)
            self.lost = err

    def write(self, text: str) -> int:
        self._guarded(lambda: self._file.write(text))
        return len(text)

    def flush(self) -> None:
        if not self._file.closed:  # IOBase.close flushes once more
            self._guarded(self._file.flush)

    def close(self) -> None:
        self._guarded(self._file.close)
        if not self._file.closed:  # its flush was refused: the rest is dropped
            with contextlib.suppress(OSError):
                self._file.close()
        super().close()


def _tagged(image: str) -> bool:
    """Whether ``image`` ends with a tag (``:TAG`` after its last ``/``)."""
    return ":" in image.rsplit("/", 1)[-1]


def build_name(project: str, build_id: str) -> str:
    return f"projects/{project}/builds/{build_id}"


class BuildRunner:
    def __init__(self, state: EmulatorState, engine: ContainerEngine | None = None) -> None:
        self.state = state
        self.engine = engine
        """The container engine builds run on (None: the local image store's builder)."""
        self.records = state.records
        self.hold_s = float(os.environ.get(HOLD_ENV, "0") or 0)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        state.on_close(self._closing.set)

    def get(self, project: str, build_id: str) -> cb.Build | None:
        return self.records.get(BUILDS, build_name(project, build_id))

    def _set(self, build: cb.Build, **fields: object) -> cb.Build | None:
        """Update a running build; None when it has ended (e.g. cancelled) meanwhile."""
        with self._lock:
            current = self.records.require(BUILDS, build.name)
            if current.status not in RUNNING:
                return None

            def change(record: Any) -> None:
                for key, value in fields.items():
                    setattr(record, key, value)

            return self.records.update(BUILDS, build.name, change)

    def start(self, project: str, build: Any) -> cb.Build:
        """Store ``build`` QUEUED and run it in a thread of its own."""
        build.id = str(uuid.uuid4())
        build.project_id = project
        build.name = build_name(project, build.id)
        build.status = Status.QUEUED
        build.create_time = self.state.clock.now()
        if not build.logs_bucket:
            build.logs_bucket = LOGS_FOLDER.format(project=project)
        log_file = self.state.home.build_log(build.id)
        logged = self._log_object(build)
        try:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            logged.parent.mkdir(parents=True, exist_ok=True)
            logged.touch()
            log_file.unlink(missing_ok=True)
            log_file.symlink_to(logged)
            build.log_url = log_file.as_uri()
            self.records.insert(BUILDS, f"projects/{project}", build)
        except BaseException:  # a full disk, say: nothing of this build is left
            logged.unlink(missing_ok=True)
            shutil.rmtree(log_file.parent, ignore_errors=True)
            raise
        threading.Thread(target=self._run, args=(build, log_file), daemon=True).start()
        return build

    def _log_object(self, build: cb.Build) -> Path:
        """Where the build's log is in the store: ``<logs bucket>/log-<id>.txt``, as Cloud
        Build writes it and ``gcloud builds submit`` reads it
        (google-cloud-sdk ``api_lib/cloudbuild/logs.py``, ``GCSLogTailer.FromBuild``)."""
        return Path(
            to_path(
                f"{build.logs_bucket.rstrip('/')}/log-{build.id}.txt",
                self.state.home.gcs,
                "build.logs_bucket",
            )
        )

    def _run(self, build: cb.Build, log_file: Path) -> None:
        if self._closing.wait(self.hold_s):
            return  # the server stops: the next one records this build FAILURE
        if self._set(build, status=Status.WORKING, start_time=self.state.clock.now()) is None:
            return
        log = BuildLog(log_file)
        try:
            digest, not_run = self._build(build, log)
            if not_run is not None:
                log.write(f"RUN steps not executed by the local builder: {not_run or 'none'}\n")
            log.flush()
            if log.lost is not None:  # its log cut short: it fails, nothing pushed
                raise log.lost
            self._push(build, digest, log, on_engine=not_run is None)
        except Exception as err:  # a failed build is recorded, never raised
            self._failed(build, log, err)
        finally:
            log.close()

    def _full(self, err: OSError) -> str:
        """A full disk in words: the store's, named, and what was refused."""
        refused = f"{err.strerror or err} writing {err.filename or 'the store'}"
        return str(DiskFull(self.state.root, refused).strerror)

    def _failed(self, build: cb.Build, log: BuildLog, err: Exception) -> None:
        """Record a build that raised FAILURE, its disk named when that was full (Cloud
        Build's ``Build.Status`` has FAILURE for a build that failed, no RESOURCE_EXHAUSTED)."""
        detail = self._full(err) if isinstance(err, OSError) and is_disk_full(err) else str(err)
        log.write(f"ERROR: {detail}\n")
        self._set(
            build, status=Status.FAILURE, status_detail=detail, finish_time=self.state.clock.now()
        )

    def _push(
        self, build: cb.Build, digest: str, log: io.TextIOBase, on_engine: bool = False
    ) -> None:
        """Tag the stored image with ``build.images`` and end SUCCESS, unless cancelled meanwhile.

        Under the lock that Cancel takes, so a build cancelled while it ran pushes nothing
        (as on Cloud Build): no job can then run from its image names. An Artifact Registry
        image whose repository was not created is pushed all the same, the log saying that
        on Google Cloud the push fails
        (:func:`trainpool.emulator.artifact_registry.repositories.push_problem`).
        """
        with self._lock:
            current = self.records.require(BUILDS, build.name)
            if current.status not in RUNNING:
                log.write(f"build ended {current.status.name} while it ran: nothing pushed\n")
                return
            for image in build.images:
                problem = push_problem(self.state, image)
                if problem is not None:
                    log.write(problem + "\n")
                if on_engine and self.engine is not None:
                    repository, _, tag = (
                        image.rpartition(":") if _tagged(image) else (image, "", "latest")
                    )
                    found = self.engine.client.images.get(f"sha256:{digest}")
                    found.tag(repository, tag)
                    if problem is None and read_image_name(image) is not None:
                        record_push(
                            self.state,
                            f"{repository}:{tag}",
                            f"sha256:{digest}",
                            int(found.attrs.get("Size") or 0),
                        )
                else:
                    image_store.tag(self.state.root, image, digest)
                log.write(f"pushed {image}@sha256:{digest}\n")
            log.write("DONE\n")

            def success(record: Any) -> None:
                record.status = Status.SUCCESS
                record.finish_time = self.state.clock.now()
                record.results = cb.Results(
                    images=[cb.BuiltImage(name=i, digest=f"sha256:{digest}") for i in build.images]
                )

            self.records.update(BUILDS, build.name, success)

    def _build(self, build: cb.Build, log: io.TextIOBase) -> tuple[str, list[str] | None]:
        """Build the context into an image, not yet tagged: on the engine (its id's digest,
        None) or into the local image store (its digest, the RUN steps not run)."""
        from google.cloud import storage  # type: ignore[attr-defined]

        source = build.source.storage_source
        where = f"gs://{source.bucket}/{source.object_}"
        log.write(f"fetching {where}\n")
        local = Path(to_path(where, self.state.home.gcs, "build.source.storage_source"))
        if local.is_file():  # in this emulator's store (gcloud builds submit put it there)
            data = local.read_bytes()
        else:  # elsewhere: google-cloud-storage (STORAGE_EMULATOR_HOST, if set, says where)
            client = storage.Client(project=build.project_id)
            data = client.bucket(source.bucket).blob(source.object_).download_as_bytes()
        build_args = {}
        for step in build.steps:
            for arg in step.args:
                if arg.startswith("--build-arg="):
                    key, _, value = arg.removeprefix("--build-arg=").partition("=")
                    build_args[key] = value
        if self.engine is not None:
            try:
                image_id = engine_builds.build(self.engine, data, build_args, log)
                return image_id.removeprefix("sha256:"), None
            except engine_builds.BaseUnavailable as err:
                log.write(
                    f"{err}\nnot built on {self.engine.describe}: building into the local image "
                    "store instead, whose images run as processes that imitate them\n"
                )
        with tempfile.TemporaryDirectory() as tmp:
            if len(data) > archives.MAX_BYTES:
                raise archives.UnsafeArchive(
                    f"{where}: {len(data):,} bytes; accepted: at most {archives.MAX_BYTES:,}"
                )
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                archives.extract(tar, tmp, where)
            ctx = context.BuildContext.of(context.collect(Path(tmp), patterns=[]), build_args)
            log.write(f"building context sha256:{ctx.digest} into the local image store\n")
            not_run = image_store.add(ctx, self.state.root, [])
        return ctx.digest, not_run

    def recover(self) -> None:
        """Builds a previous server left running end FAILURE (their threads died with it)."""

        def failed(record: Any) -> None:
            record.status = Status.FAILURE
            record.status_detail = RESTART_DETAIL

        with self._lock:
            for name in self.records.names(BUILDS, states=RUNNING):
                self.records.update(BUILDS, name, failed)

    def cancel(self, project: str, build_id: str) -> cb.Build | None:
        """Mark the build CANCELLED; None when it has already ended."""

        def cancelled(record: Any) -> None:
            record.status = Status.CANCELLED
            record.finish_time = self.state.clock.now()

        with self._lock:
            build = self.records.require(BUILDS, build_name(project, build_id))
            if build.status not in RUNNING:
                return None
            return self.records.update(BUILDS, build.name, cancelled)
