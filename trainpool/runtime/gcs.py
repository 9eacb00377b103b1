"""``gs://BUCKET/PATH`` as a file path: Vertex's FUSE mount, or the local store."""

from __future__ import annotations

import os
from collections.abc import Mapping

VERTEX_MOUNT = "/gcs"
"""Where Vertex mounts every bucket in a replica (Cloud Storage FUSE)."""


def local_path(uri: str, environ: Mapping[str, str] | None = None) -> str:
    """``gs://b/p`` → ``$TRAINPOOL_GCS_ROOT/b/p`` when set (local runs), else ``/gcs/b/p``.

    Anything that is not a ``gs://`` URI is returned unchanged.
    """
    if not uri.startswith("gs://"):
        return uri
    bucket, _, rest = uri[len("gs://") :].partition("/")
    if not bucket:
        raise ValueError(f"uri: {uri!r} names no bucket; accepted: gs://BUCKET/PATH")
    env = os.environ if environ is None else environ
    root = env.get("TRAINPOOL_GCS_ROOT") or VERTEX_MOUNT
    path = os.path.join(root, bucket, rest)
    return path + "/" if uri.endswith("/") and not path.endswith("/") else path
