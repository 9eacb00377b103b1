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

The name is a claim, not a proof: anyone who can write under the pipeline root could put
other code there. So the files of an object are hashed again (:func:`archive_digest`, the
same digest as the build context's) wherever it is used: an upload that finds an object
whose files do not hash to its name replaces it and says so, and :func:`unpack` refuses
one (:class:`SourceMismatch`) before anything is extracted.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import sys
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from trainpool.cluster_env import gcs
from trainpool.errors import InputError, brief
from trainpool.images import archives, context, storage
from trainpool.images.archives import UnsafeArchive

__all__ = [
    "SourceMismatch",
    "UnsafeArchive",
    "object_uri",
    "pack",
    "unpack",
    "upload",
    "upload_param",
]

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


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def upload(source_dir: str | Path, pipeline_root: str, say: Callable[[str], None] = _say) -> str:
    """Pack ``source_dir`` and put it under ``pipeline_root`` once; return its URI.

    An object already at that URI is kept only when its files hash to the digest its name
    says; otherwise it is replaced, and ``say`` (stderr by default) tells why.
    """
    digest, data = pack(source_dir)
    uri = object_uri(pipeline_root, digest)
    if storage.exists(uri):
        problem = mismatch(uri, storage.read(uri))
        if problem is None:
            return uri
        say(f"{problem}; replaced it with the files of {source_dir}")
    storage.write(uri, data, content_type="application/gzip")
    return uri


class SourceMismatch(InputError):
    """A source object whose files do not hash to the digest its name says."""


_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_CHUNK = 1 << 20


def named_digest(uri: str) -> str | None:
    """The digest a source object's name claims (``.../<digest>.tar.gz``), or None."""
    name = PurePosixPath(uri).name.removesuffix(SUFFIX)
    return name if _DIGEST.match(name) else None


def archive_digest(tar: tarfile.TarFile) -> str | None:
    """The build-context digest of the archive's files, as :func:`pack` made it (None when
    it holds anything :func:`pack` never writes: folders, devices, a path twice)."""
    rows: list[context.Row] = []
    for member in tar.getmembers():
        if member.issym():
            rows.append((member.name, member.mode, member.linkname))
            continue
        if not member.isfile():
            return None
        handle = tar.extractfile(member)
        if handle is None:
            return None
        digest = hashlib.sha256()
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
        rows.append((member.name, member.mode, digest.hexdigest()))
    paths = [row[0] for row in rows]
    if len(set(paths)) != len(paths):
        return None
    return context.digest_of(sorted(rows))


def mismatch(uri: str, data: bytes) -> str | None:
    """Why the bytes ``data`` of the object ``uri`` are not the source its name says, or
    None when its files hash to that digest."""
    claimed = named_digest(uri)
    if claimed is None:
        return f"source_dir: {uri}: the name is not <sha256 digest>{SUFFIX}"
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            found = archive_digest(tar)
    except (tarfile.TarError, OSError, EOFError):
        found = None
    if found == claimed:
        return None
    what = "is not a source archive trainpool made" if found is None else f"hash to {found}"
    return (
        f"source_dir: {uri}: the object's files {what}, not the digest its name says "
        "(it was changed after it was uploaded)"
    )


def unpack(uri: str, dest: Path) -> Path:
    """Extract the source object ``uri`` into the empty folder ``dest``; return ``dest``.
    A member past the bounds of :mod:`trainpool.images.archives` (files, bytes, depth, name
    length) or that would land outside ``dest`` (:class:`UnsafeArchive`), or files that do
    not hash to the digest the name says (:class:`SourceMismatch`), are refused before
    anything is written."""
    data = storage.read(uri)
    if len(data) > archives.MAX_BYTES:
        raise UnsafeArchive(
            f"source_dir: {uri}: {len(data):,} bytes; accepted: at most {archives.MAX_BYTES:,}"
        )
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            members = archives.checked_members(tar, f"source_dir: {uri}")
            problem = mismatch(uri, data)
            if problem is not None:
                raise SourceMismatch(
                    f"{problem}; refused: build from the folder again (trainpool run --local "
                    "and trainpool submit replace the object)"
                )
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
