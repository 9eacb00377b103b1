"""Build an image from a trainer folder: context, content tag, cache check, backend.

The tag is ``ctx-`` plus the first 20 hex digits of the context digest, so an
unchanged folder maps to the same tag and its build is skipped. A tag given with the
repository (``REPO:TAG``, as ``docker build -t`` takes it) is put on the image too, built
or found, and moved there if it named another image. A backend is anything with
``name``, ``find(image, digest)`` (the URI with digest of an existing image, or None),
``build(context, image)`` (URI with digest, notes) and ``tag(image, digest, name)``:
``images.image_store_backend`` (the local image store, Docker engine),
``trainpool.images.cloud_build.CloudBuildBackend`` for Cloud Build.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from trainpool.images import context, dockerfile, image_ref, vendor
from trainpool.images.context import BuildContext

TAG_PREFIX = "ctx-"


class Backend(Protocol):
    name: str

    def find(self, image: str, digest: str) -> str | None: ...

    def build(self, context: BuildContext, image: str) -> tuple[str, list[str]]: ...

    def tag(self, image: str, digest: str, name: str) -> None: ...


@dataclass(frozen=True)
class BuildRequest:
    source_dir: Path
    repository: str
    framework: str = "pytorch"
    base_image: str = ""
    reduction_server: bool = False
    entrypoint: list[str] | None = None
    build_args: Mapping[str, str] = field(default_factory=dict)
    tag: str = ""
    """A tag of the user's (``REPO:TAG``), put on the image besides its content tag."""


@dataclass(frozen=True)
class BuildResult:
    image_uri: str
    cached: bool
    backend: str
    digest: str
    tag: str
    dockerfile: str  # "generated" or "own"
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "imageUri": self.image_uri,
            "cached": self.cached,
            "backend": self.backend,
            "contextDigest": f"sha256:{self.digest}",
            "tag": self.tag,
            "dockerfile": self.dockerfile,
            "notes": self.notes,
        }


def repository(uri: str, field_name: str = "image_uri") -> str:
    """Check ``uri`` names a repository only (the tag comes from the context)."""
    repo, tag = target(uri, field_name)
    if tag:
        raise ValueError(
            f"{field_name}: {uri!r} has a tag; accepted: the repository only "
            f"(e.g. {repo!r}); trainpool tags the image with its context digest"
        )
    return repo


def target(uri: str, field_name: str = "image_uri") -> tuple[str, str]:
    """``(repository, tag)`` of ``REPO`` or ``REPO:TAG`` (tag "" when none), as
    ``docker build -t`` takes it; a digest is refused (a build makes the digest)."""
    ref = image_ref.parse(uri, field_name)
    if ref.digest:
        raise ValueError(
            f"{field_name}: {uri!r} has a digest; accepted: REPOSITORY or REPOSITORY:TAG "
            f"(e.g. {ref.repository!r}); the build gives the image its digest"
        )
    return ref.repository, ref.tag


def prepare(request: BuildRequest) -> tuple[BuildContext, str]:
    """The build context of ``request`` and whether its Dockerfile is "own" or "generated"."""
    entries = context.collect(request.source_dir)
    paths = [e.path for e in entries]
    has_own_copy = any(p.startswith("trainpool/") for p in paths)
    needs_runtime = not has_own_copy and vendor.imports_trainpool(entries)
    if needs_runtime:
        entries += vendor.runtime_entries()
    if dockerfile.DOCKERFILE in paths:
        return BuildContext.of(entries, request.build_args), "own"
    spec = dockerfile.DockerfileSpec(
        base_image=dockerfile.base_for(request.framework, request.base_image),
        entrypoint=request.entrypoint or dockerfile.default_entrypoint(paths),
        requirements="requirements.txt" in paths,
        reduction_server=request.reduction_server,
        vendored_runtime=needs_runtime,
    )
    if spec.adds_plugin:
        entries.append(vendor.nccl_check_entry())
    entries.append(context.generated(dockerfile.DOCKERFILE, dockerfile.render(spec).encode()))
    return BuildContext.of(entries, request.build_args), "generated"


def build(
    request: BuildRequest, backend: Backend, log: Callable[[str], None] = print
) -> BuildResult:
    """Build ``request`` with ``backend``, or skip it when the image already exists."""
    ctx, kind = prepare(request)
    digest = ctx.digest
    tag = TAG_PREFIX + digest[:20]
    repo = repository(request.repository, "image_uri")
    image = f"{repo}:{tag}"
    found = backend.find(image, digest)
    if found:
        log(f"{image}: an image of this exact context exists ({backend.name}); build skipped")
        return _tagged(BuildResult(found, True, backend.name, digest, tag, kind), request, backend)
    log(f"{image}: building with {backend.name} ({len(ctx.entries)} files, {kind} Dockerfile)")
    uri, notes = backend.build(ctx, image)
    for note in notes:
        log(note)
    result = BuildResult(uri, False, backend.name, digest, tag, kind, notes)
    return _tagged(result, request, backend)


def _tagged(result: BuildResult, request: BuildRequest, backend: Backend) -> BuildResult:
    """``result`` with the user's tag put on its image (``REPO:TAG@sha256:...``)."""
    if not request.tag:
        return result
    name = f"{request.repository}:{request.tag}"
    backend.tag(result.image_uri, result.digest, name)
    _, _, image_digest = result.image_uri.partition("@")
    uri = f"{name}@{image_digest}" if image_digest else name
    return replace(result, image_uri=uri, tag=request.tag)
