"""``gs://BUCKET/OBJECT`` as a file path: the one mapping, checked by Cloud Storage's naming rules.

Vertex mounts every bucket a replica can read at ``/gcs/BUCKET/`` (Cloud Storage
FUSE); locally the emulator's store plays that part at ``<root>/gcs/BUCKET/``. Any
``gs://`` URI that becomes a path goes through :func:`to_path`, which refuses what
Cloud Storage itself refuses and what no file path can stand for, so no URI reaches
a path outside the root.

Rules, from Cloud Storage's naming pages (cloud.google.com/storage/docs/buckets#naming
and /docs/objects#naming): a bucket name has 3-63 characters (up to 222 when it has
dots, each dot-separated part at most 63), only lowercase letters, digits, ``-``,
``_`` and ``.``, starts and ends with a letter or digit, is not an IP address, does
not start with ``goog`` and does not contain ``google``. An object name is 1-1024
bytes of UTF-8 with no carriage return or line feed, and is not ``.`` or ``..``.
Object names are flat in Cloud Storage (``a/../b`` is a legal name), but a file path
cannot stand for an empty, ``.`` or ``..`` segment, so those are refused here.

Standard library only.
"""

from __future__ import annotations

import ipaddress
import os
import re

from trainpool.errors import InputError

SCHEME = "gs://"
VERTEX_MOUNT = "/gcs"
"""Where Vertex mounts every bucket in a replica (Cloud Storage FUSE)."""
LOCAL_ROOT_ENV = "TRAINPOOL_GCS_ROOT"
"""Names the folder that stands for Cloud Storage on this machine (the emulator's
``<root>/gcs``); set for replicas and local pipeline tasks, never on Vertex."""

_BUCKET_CHARS = re.compile(r"^[a-z0-9][a-z0-9._-]*[a-z0-9]$")
_ACCEPTED = "accepted: gs://BUCKET/OBJECT with a bucket and object named by Cloud Storage's rules"


class GcsUriError(InputError):
    """A ``gs://`` URI Cloud Storage would refuse, or no file path can stand for."""


def bucket_problem(bucket: str) -> str | None:
    """Why ``bucket`` is not a Cloud Storage bucket name, or None when it is one."""
    if not 3 <= len(bucket) <= (222 if "." in bucket else 63):
        return "a bucket name has 3 to 63 characters (222 with dots)"
    if not _BUCKET_CHARS.match(bucket):
        return (
            "a bucket name has only lowercase letters, digits, '-', '_' and '.', "
            "and starts and ends with a letter or digit"
        )
    if any(len(part) > 63 or not part for part in bucket.split(".")):
        return "each dot-separated part of a bucket name has 1 to 63 characters"
    try:
        ipaddress.ip_address(bucket)
        return "a bucket name cannot be an IP address"
    except ValueError:
        pass
    if bucket.startswith("goog") or "google" in bucket:
        return "a bucket name cannot start with 'goog' or contain 'google'"
    return None


def object_problem(name: str) -> str | None:
    """Why ``name`` (no trailing ``/``) cannot be an object mapped to a path, or None."""
    if len(name.encode("utf-8", "surrogatepass")) > 1024:
        return "an object name has at most 1024 bytes"
    if any(c in name for c in "\r\n\0"):
        return "an object name has no carriage return, line feed or NUL"
    if any(seg in ("", ".", "..") for seg in name.split("/")):
        return "an object name mapped to a path has no empty, '.' or '..' segment"
    return None


def split(uri: str, field: str = "uri") -> tuple[str, str]:
    """``(bucket, object)`` of ``gs://BUCKET[/OBJECT][/]``; GcsUriError naming ``field``.

    The object is ``""`` for the bucket itself; a trailing ``/`` (a folder) is dropped.
    """
    if not uri.startswith(SCHEME):
        raise GcsUriError(f"{field}: {uri!r} is not a gs:// URI; {_ACCEPTED}")
    bucket, _, name = uri[len(SCHEME) :].partition("/")
    problem = bucket_problem(bucket)
    name = name[:-1] if name.endswith("/") else name
    if problem is None and name:
        problem = object_problem(name)
    if problem is not None:
        raise GcsUriError(f"{field}: {uri!r}: {problem}; {_ACCEPTED}")
    return bucket, name


def to_path(uri: str, root: str | os.PathLike[str], field: str = "uri") -> str:
    """Where ``gs://BUCKET/OBJECT`` lives under ``root`` (``/gcs`` on Vertex): always inside it.

    A trailing ``/`` is kept, so a folder URI maps to a folder path (the bucket too).
    """
    bucket, name = split(uri, field)
    path = os.path.join(os.fspath(root), bucket, name)
    return path + "/" if uri.endswith("/") and not path.endswith("/") else path


def from_path(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> str | None:
    """The ``gs://`` URI of ``path`` when it lies in a bucket under ``root``, else None."""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    if rel == "." or rel.startswith(".."):
        return None
    uri = SCHEME + rel.replace(os.sep, "/")
    try:
        split(uri)
    except GcsUriError:
        return None
    return uri
