"""Build an image from a trainer folder: context, content tag, cache check, backend.

The tag is ``ctx-`` plus the first 20 hex digits of the context digest, so an
unchanged folder maps to the same tag and its build is skipped. A backend is
anything with ``name``, ``find(image, digest)`` (the URI with digest of an
existing image, or None) and ``build(context, image)`` (URI with digest, notes):
:class:`LocalBackend` here, ``trainpool.images.cloud_build.CloudBuildBackend``
for Cloud Build.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from trainpool.images import context, dockerfile, image_ref, vendor
from trainpool.images.context import BuildContext

TAG_PREFIX = "ctx-"


class Backend(Protocol):
    name: str

    def find(self, image: str, digest: str) -> str | None: ...

    def build(self, context: BuildContext, image: str) -> tuple[str, list[str]]: ...


@dataclass(frozen=True)
class BuildRequest:
    source_dir: Path
    repository: str
    framework: str = "pytorch"
    base_image: str = ""
    reduction_server: bool = False
    entrypoint: list[str] | None = None
    build_args: Mapping[str, str] = field(default_factory=dict)


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
    ref = image_ref.parse(uri, field_name)
    if ref.tag or ref.digest:
        raise ValueError(
            f"{field_name}: {uri!r} has a tag or digest; accepted: the repository only "
            f"(e.g. {ref.repository!r}); trainpool tags the image with its context digest"
        )
    return ref.repository


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
    image = f"{repository(request.repository, 'image_uri')}:{tag}"
    found = backend.find(image, digest)
    if found:
        log(f"{image}: an image of this exact context exists ({backend.name}); build skipped")
        return BuildResult(found, True, backend.name, digest, tag, kind)
    log(f"{image}: building with {backend.name} ({len(ctx.entries)} files, {kind} Dockerfile)")
    uri, notes = backend.build(ctx, image)
    for note in notes:
        log(note)
    return BuildResult(uri, False, backend.name, digest, tag, kind, notes)
