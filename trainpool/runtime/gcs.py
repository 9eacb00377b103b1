"""``gs://BUCKET/PATH`` as a file path inside a replica: Vertex's FUSE mount, or the local store."""

from __future__ import annotations

import os
from collections.abc import Mapping

from trainpool.cluster_env.gcs import LOCAL_ROOT_ENV, VERTEX_MOUNT, to_path


def local_path(uri: str, environ: Mapping[str, str] | None = None) -> str:
    """``gs://b/p`` → ``$TRAINPOOL_GCS_ROOT/b/p`` when set (local runs), else ``/gcs/b/p``.

    Anything that is not a ``gs://`` URI is returned unchanged; a ``gs://`` URI that
    Cloud Storage would refuse, or that could leave the root, raises ``GcsUriError``.
    """
    if not uri.startswith("gs://"):
        return uri
    env = os.environ if environ is None else environ
    return to_path(uri, env.get(LOCAL_ROOT_ENV) or VERTEX_MOUNT)
