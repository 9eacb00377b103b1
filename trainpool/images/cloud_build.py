"""Cloud Build backend: context tarball to Cloud Storage, build, wait, push to Artifact Registry.

The context goes to ``gs://BUCKET/trainpool/contexts/<digest>-<nonce>.tar.gz`` (one
object per build, so concurrent builds of one context never delete each other's); the build
runs ``docker build`` on it and pushes the image (Cloud Build's ``images``). Its
logs URL is printed, the build is polled until it ends (or until its own timeout
plus ``QUEUE_S`` have passed: then it is cancelled), and SIGTERM (a cancelled
pipeline task) cancels it. A successful build leaves
``gs://BUCKET/trainpool/images/<digest>.json`` (image URI with digest): that
marker is how a later run knows the image exists and skips the build. Once the
build has ended the uploaded context is deleted, so contexts do not pile up
under the bucket (a retry uploads it again); only the small markers stay.

With ``VERTEX_AI_EMULATOR_HOST`` set the client talks to the trainpool emulator
over insecure loopback gRPC; ``STORAGE_EMULATOR_HOST`` likewise points
google-cloud-storage at a storage emulator.
"""

from __future__ import annotations

import io
import json
import signal
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO, Protocol

from trainpool import signals
from trainpool.config import emulator_host

DOCKER_STEP = "gcr.io/cloud-builders/docker"
CONTEXTS = "trainpool/contexts"
MARKERS = "trainpool/images"
DEFAULT_TIMEOUT_S = 3600
QUEUE_S = 600
"""How long past the build's own timeout the client waits (a queued build's time) before
giving up on it and cancelling it."""


class Context(Protocol):
    """What a build needs of a build context (``trainpool.images.context.BuildContext``)."""

    @property
    def build_args(self) -> Mapping[str, str]: ...

    @property
    def digest(self) -> str: ...

    def write_tarball(self, out: BinaryIO) -> None: ...


class BuildFailed(RuntimeError):
    """A build ended in a state other than SUCCESS."""


def cloud_build_client() -> Any:
    """A ``CloudBuildClient`` (or one talking to the emulator when it is set)."""
    from google.cloud.devtools.cloudbuild_v1 import CloudBuildClient

    host = emulator_host()
    if host is None:
        return CloudBuildClient()
    import grpc
    from google.cloud.devtools.cloudbuild_v1.services.cloud_build.transports import (
        CloudBuildGrpcTransport,
    )

    return CloudBuildClient(
        transport=CloudBuildGrpcTransport(host=host, channel=grpc.insecure_channel(host))
    )


def build_request(image: str, bucket: str, obj: str, build_args: Mapping[str, str]) -> Any:
    """The ``Build`` that builds the uploaded context and pushes ``image``."""
    from google.cloud.devtools.cloudbuild_v1 import types

    args = ["build", "--tag", image]
    args += [f"--build-arg={k}={v}" for k, v in sorted(build_args.items())]
    return types.Build(
        source=types.Source(storage_source=types.StorageSource(bucket=bucket, object_=obj)),
        steps=[types.BuildStep(name=DOCKER_STEP, args=[*args, "."])],
        images=[image],
        tags=["trainpool", image.rsplit(":", 1)[1]],
        timeout={"seconds": DEFAULT_TIMEOUT_S},
    )


class CloudBuildBackend:
    """Builds with Cloud Build in ``project``; contexts and markers in ``bucket``."""

    name = "cloud-build"

    def __init__(
        self,
        project: str,
        bucket: str = "",
        poll_s: float | None = None,
        log: Callable[[str], None] = print,
        wait_s: float = DEFAULT_TIMEOUT_S + QUEUE_S,
    ) -> None:
        if not project:
            raise ValueError("project: '' is empty; accepted: the Google Cloud project to build in")
        self.project = project
        self.default_bucket = not bucket
        self.bucket_name = bucket or f"{project}_cloudbuild"
        # every 2 s against Cloud Build; against the loopback emulator, where a build of a
        # source context takes a fraction of a second, a 2-s poll was most of the build
        self.poll_s = poll_s if poll_s is not None else (0.25 if emulator_host() else 2.0)
        self.wait_s = wait_s
        self.log = log
        self.client = cloud_build_client()
        from google.cloud import storage  # type: ignore[attr-defined]

        self.bucket = storage.Client(project=project).bucket(self.bucket_name)

    def find(self, image: str, digest: str) -> str | None:
        marker = self.bucket.blob(f"{MARKERS}/{digest}.json")
        if not marker.exists():
            return None
        found: str = json.loads(marker.download_as_bytes())["imageUri"]
        return found

    def upload(self, context: Context) -> str:
        """Upload the context tarball for one build; return its object name."""
        obj = f"{CONTEXTS}/{context.digest}-{uuid.uuid4().hex[:12]}.tar.gz"
        if self.default_bucket and not self.bucket.exists():
            # as `gcloud builds submit` does ("--gcs-source-staging-dir ... If the default
            # bucket is used and it does not exist, it will be created"): made on first use
            self.bucket.create()
            self.log(f"created gs://{self.bucket_name}, Cloud Build's default source bucket")
        data = io.BytesIO()
        context.write_tarball(data)
        self.bucket.blob(obj).upload_from_string(data.getvalue(), content_type="application/gzip")
        return obj

    def wait(self, build_id: str) -> Any:
        """Poll the build until it ends; return it. Past ``wait_s``, cancel it and raise
        :class:`BuildFailed`."""
        from google.cloud.devtools.cloudbuild_v1 import types

        running = {
            types.Build.Status.PENDING,
            types.Build.Status.QUEUED,
            types.Build.Status.WORKING,
        }
        deadline = time.monotonic() + self.wait_s
        while True:
            build = self.client.get_build(project_id=self.project, id=build_id)
            if build.status not in running:
                return build
            if time.monotonic() > deadline:
                self.cancel(build_id)
                raise BuildFailed(
                    f"build {build_id} still {build.status.name} after {self.wait_s:g}s: "
                    f"cancelled; logs: {build.log_url}"
                )
            time.sleep(self.poll_s)

    def _forget_context(self, obj: str) -> None:
        """Delete an uploaded context once its build has ended (the marker is what stays)."""
        from google.api_core.exceptions import NotFound

        try:
            self.bucket.blob(obj).delete()
        except NotFound:
            pass

    def cancel(self, build_id: str) -> None:
        """Cancel the build; one that has already ended is left as it is."""
        from google.api_core.exceptions import FailedPrecondition

        self.log(f"cancelling build {build_id}")
        try:
            self.client.cancel_build(project_id=self.project, id=build_id)
        except FailedPrecondition as err:
            self.log(f"build {build_id} not cancelled: {err.message}")

    def tag(self, image: str, digest: str, name: str) -> None:
        """Not supported: Cloud Build tags only the images it builds, and a build is skipped
        when its context was built before (``images.service`` refuses a tag up front)."""
        raise ValueError(f"image_uri: {name!r}; accepted with Cloud Build: a repository only")

    def build(self, context: Context, image: str) -> tuple[str, list[str]]:
        obj = self.upload(context)
        self.log(f"uploaded the build context to gs://{self.bucket_name}/{obj}")
        try:
            final = self._run(context, image, obj)
        finally:
            self._forget_context(obj)
        return self._pushed(context, image, final)

    def _run(self, context: Context, image: str, obj: str) -> Any:
        """Create the build of the uploaded context and follow it to its end."""
        request = build_request(image, self.bucket_name, obj, context.build_args)
        with signals.deferred() as seen:  # a signal during create must still cancel what it made
            operation = self.client.create_build(project_id=self.project, build=request)
        started = operation.metadata.build
        self.log(f"Cloud Build {started.id}: logs at {started.log_url}")
        if seen:
            self.cancel(started.id)
            raise BuildFailed(f"build cancelled: {signal.Signals(seen[0]).name} received")
        try:
            with signals.raise_on_signal():
                return self.wait(started.id)
        except signals.Interrupted as sig:
            with signals.deferred():  # a second signal must not stop the cancel half-way
                self.cancel(started.id)
            raise BuildFailed(f"build cancelled: {sig} received") from None

    def _pushed(self, context: Context, image: str, final: Any) -> tuple[str, list[str]]:
        """The image URI of a ended build, and its marker written; BuildFailed unless SUCCESS."""
        from google.cloud.devtools.cloudbuild_v1 import types

        if final.status != types.Build.Status.SUCCESS:
            raise BuildFailed(
                f"build {final.id} ended {final.status.name}: "
                f"{final.status_detail or 'no detail'}; logs: {final.log_url}"
            )
        digests = [i.digest for i in final.results.images if i.name == image and i.digest]
        uri = f"{image}@{digests[0]}" if digests else image
        marker = {"imageUri": uri, "buildId": final.id, "logUrl": final.log_url}
        self.bucket.blob(f"{MARKERS}/{context.digest}.json").upload_from_string(
            json.dumps(marker, sort_keys=True), content_type="application/json"
        )
        return uri, [f"Cloud Build {final.id}: SUCCESS, pushed {uri}"]
