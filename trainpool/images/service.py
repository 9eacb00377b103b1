"""Build this trainer folder into this repository: the one entry point, and the backend choice.

The ``build_image`` component and ``trainpool build-image`` both call
:func:`build_image`; nothing else decides between Cloud Build, a Docker engine and
the local image store. ``auto`` never picks Docker: a local build goes to the store,
which the emulator runs; ``docker`` builds on the engine, for running by hand.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from trainpool import emulator_client
from trainpool.config import emulator_host
from trainpool.images import builder, sources
from trainpool.images.builder import BuildResult
from trainpool.images.image_store_backend import docker_backend, local_backend

BACKENDS = ("auto", "local", "docker", "cloud")


def default_repository(source_dir: Path, local: bool, project: str, location: str) -> str:
    """``local/<folder>`` locally, else ``LOCATION-docker.pkg.dev/PROJECT/trainpool/<folder>``."""
    name = re.sub(r"[^a-z0-9]+", "-", source_dir.resolve().name.lower()).strip("-") or "trainer"
    if local:
        return f"local/{name}"
    return f"{location}-docker.pkg.dev/{project}/trainpool/{name}"


def uses_cloud_build(backend: str, project: str) -> bool:
    """Whether ``backend`` means Cloud Build for ``project``; raises ValueError on bad input.

    ``auto`` is Cloud Build when a project is given (with the Vertex emulator set, only
    when a storage emulator is set too, since contexts go through Cloud Storage), else the
    local image store (``local``), whether or not a Docker engine runs.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend: {backend!r}; accepted: {', '.join(BACKENDS)}")
    storage_reachable = not emulator_host() or bool(os.environ.get("STORAGE_EMULATOR_HOST"))
    use_cloud = backend == "cloud" or (backend == "auto" and bool(project) and storage_reachable)
    if use_cloud and not project:
        raise ValueError("project: '' is empty; accepted: a project id (needed by backend 'cloud')")
    return use_cloud


def build_image(
    source_dir: str | Path,
    *,
    image_uri: str = "",
    framework: str = "pytorch",
    reduction_server: bool = False,
    backend: str = "auto",
    project: str = "",
    location: str = "us-central1",
    base_image: str = "",
    bucket: str = "",
    build_args: Mapping[str, str] | None = None,
    root: Path | None = None,
    log: Callable[[str], None] | None = None,
) -> BuildResult:
    """Build ``source_dir`` into ``image_uri``: a repository (the tag is the context digest)
    or ``REPOSITORY:TAG``, tagged as ``docker build -t`` does, besides the content tag.

    ``source_dir`` is a folder, or a source object ``gs://.../trainpool/sources/<digest>.tar.gz``
    (``images.sources``), read without the ``/gcs`` mount. Skips the build when an image of
    this exact context exists. Bad input raises ValueError naming the field; a failed build
    raises RuntimeError.
    """
    source = str(source_dir)
    if source.startswith("gs://"):
        if not sources.is_source_object(source):
            raise ValueError(
                f"source_dir: {source!r} is not a packed source; accepted: a local folder, or "
                f"gs://.../{sources.PREFIX}/<digest>{sources.SUFFIX} as `trainpool submit`, "
                "`trainpool run --local` or `trainpool upload-source` make it"
            )
        with tempfile.TemporaryDirectory(prefix="trainpool-source-") as tmp:
            folder = sources.unpack(source, Path(tmp) / "trainer")
            return build_image(
                folder,
                image_uri=image_uri,
                framework=framework,
                reduction_server=reduction_server,
                backend=backend,
                project=project,
                location=location,
                base_image=base_image,
                bucket=bucket,
                build_args=build_args,
                root=root,
                log=log,
            )
    use_cloud = uses_cloud_build(backend, project)
    src = Path(source_dir)
    repo, tag = builder.target(
        image_uri or default_repository(src, not use_cloud, project, location)
    )
    if use_cloud and tag:
        raise ValueError(
            f"image_uri: {image_uri!r} has a tag; accepted with Cloud Build: the repository "
            f"only ({repo!r}; the image is tagged with its context digest); a tag of your own "
            "is supported by the local image store and the Docker engine"
        )
    request = builder.BuildRequest(
        source_dir=src,
        repository=repo,
        tag=tag,
        framework=framework,
        base_image=base_image,
        reduction_server=reduction_server,
        build_args=dict(build_args or {}),
    )
    say = log or (lambda line: print(line, file=sys.stderr))
    if use_cloud:
        from trainpool.images.cloud_build import CloudBuildBackend

        chosen: builder.Backend = CloudBuildBackend(project, bucket=bucket, log=say)
    elif backend == "docker":
        chosen = docker_backend()
    else:
        chosen = local_backend(root or emulator_client.current().root)
    return builder.build(request, chosen, log=say)
