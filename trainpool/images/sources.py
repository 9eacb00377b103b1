"""A trainer folder as a content-addressed source object under the pipeline root.

The pipeline's build task runs where the user's checkout is not (a pipeline task on
Vertex, or a task started outside the checkout locally), so ``trainpool submit`` and
``trainpool run --local`` pack a local ``source_dir`` into
``<pipeline root>/trainpool/sources/<digest>.tar.gz`` and pass that URI instead. The
digest is the build-context digest of the folder's files (after ``.dockerignore``), so
identical content gives the identical URI and an unchanged folder is uploaded once;
a cached build task is then correct by construction. The build task reads the object
through ``images.storage`` (the local store, or the Cloud Storage client: never the
``/gcs`` mount) and builds from its files.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path, PurePosixPath

from trainpool.cluster_env import gcs
from trainpool.errors import InputError
from trainpool.images import context, storage

PREFIX = "trainpool/sources"
SUFFIX = ".tar.gz"
SOURCE_PARAMETERS = ("source_dir",)
"""Pipeline parameters whose local folder is uploaded this way before a run or a submit."""


def is_source_object(uri: str) -> bool:
    """Whether ``uri`` names a packed source (``gs://.../trainpool/sources/<digest>.tar.gz``)."""
    return uri.startswith("gs://") and f"/{PREFIX}/" in uri and uri.endswith(SUFFIX)


def object_uri(pipeline_root: str, digest: str) -> str:
    """Where the source with ``digest`` goes under ``pipeline_root`` (a ``gs://`` URI)."""
    gcs.split(pipeline_root, "pipeline_root")
    return f"{pipeline_root.rstrip('/')}/{PREFIX}/{digest}{SUFFIX}"


def pack(source_dir: str | Path) -> tuple[str, bytes]:
    """``(digest, reproducible .tar.gz)`` of the folder's files after its .dockerignore."""
    ctx = context.BuildContext.of(context.collect(Path(source_dir)))
    data = io.BytesIO()
    ctx.write_tarball(data)
    return ctx.digest, data.getvalue()


def upload(source_dir: str | Path, pipeline_root: str) -> str:
    """Pack ``source_dir`` and put it under ``pipeline_root`` once; return its URI."""
    digest, data = pack(source_dir)
    uri = object_uri(pipeline_root, digest)
    if not storage.exists(uri):
        storage.write(uri, data, content_type="application/gzip")
    return uri


class UnsafeArchive(InputError):
    """A source archive with a member that would land outside its folder."""


def _checked(tar: tarfile.TarFile, uri: str) -> list[tarfile.TarInfo]:
    """Every member, refusing absolute paths, ``..``, links that leave the folder and
    anything but files, folders and symlinks (Python's own ``data`` filter does this from
    3.11.4 and 3.10.12 on; Debian's 3.11.2 lacks it, so the rule is stated here)."""
    members = tar.getmembers()
    for member in members:
        parts = PurePosixPath(member.name).parts
        target = PurePosixPath(member.name).parent / member.linkname if member.issym() else None
        outside = (
            member.name.startswith("/")
            or ".." in parts
            or not (member.isfile() or member.isdir() or member.issym())
            or (target is not None and (member.linkname.startswith("/") or ".." in target.parts))
        )
        if outside:
            raise UnsafeArchive(
                f"source_dir: {uri}: member {member.name!r} would land outside the folder; "
                "accepted: an archive `trainpool upload-source` made"
            )
    return members


def unpack(uri: str, dest: Path) -> Path:
    """Extract the source object ``uri`` into the empty folder ``dest``; return ``dest``.
    A member that would land outside ``dest`` is refused before anything is written."""
    with tarfile.open(fileobj=io.BytesIO(storage.read(uri)), mode="r:gz") as tar:
        members = _checked(tar, uri)
        dest.mkdir(parents=True, exist_ok=True)
        tar.extractall(dest, members=members)  # every member checked above
    return dest


def upload_param(name: str, value: str, pipeline_root: str) -> str:
    """A pipeline parameter's value with a local folder replaced by its uploaded source URI.

    A ``gs://`` value is kept as it is; anything else must be a folder on this machine.
    """
    if value.startswith("gs://"):
        return value
    if not Path(value).is_dir():
        raise InputError(
            f"{name}: {value!r} is not a folder here ({Path.cwd()}); accepted: a trainer "
            f"folder (uploaded under the pipeline root), or gs://.../{PREFIX}/<digest>{SUFFIX}"
        )
    return upload(value, pipeline_root)
