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

import gzip
import io
import tarfile
import zlib
from pathlib import Path

from trainpool.cluster_env import gcs
from trainpool.errors import InputError, brief
from trainpool.images import archives, context, storage
from trainpool.images.archives import UnsafeArchive

__all__ = ["UnsafeArchive", "object_uri", "pack", "unpack", "upload", "upload_param"]

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


def unpack(uri: str, dest: Path) -> Path:
    """Extract the source object ``uri`` into the empty folder ``dest``; return ``dest``.
    A member past the bounds of :mod:`trainpool.images.archives` (files, bytes, depth, name
    length) or that would land outside ``dest`` is refused before anything is written."""
    data = storage.read(uri)
    if len(data) > archives.MAX_BYTES:
        raise UnsafeArchive(
            f"source_dir: {uri}: {len(data):,} bytes; accepted: at most {archives.MAX_BYTES:,}"
        )
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            members = archives.checked_members(tar, f"source_dir: {uri}")
            dest.mkdir(parents=True, exist_ok=True)
            archives.extract_members(tar, str(dest), members)
    except (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise UnsafeArchive(
            f"source_dir: {uri}: not a readable .tar.gz ({type(err).__name__}: "
            f"{brief(str(err), 120, quoted=False)}); accepted: an archive trainpool packed"
        ) from None
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
