"""Objects by ``gs://`` URI: the local store when this machine is the cloud, else Cloud Storage.

Locally (a task of ``trainpool run --local``, or a client of the emulator) a bucket is
the folder ``<store>/gcs/BUCKET`` and an object a file in it, mapped by
``cluster_env.gcs.to_path``; ``TRAINPOOL_GCS_ROOT`` names that folder, or, with
``VERTEX_AI_EMULATOR_HOST`` set and no storage emulator, the emulator's own store.
Otherwise objects go through the google-cloud-storage client (which honours
``STORAGE_EMULATOR_HOST``), never through the ``/gcs`` FUSE mount: a pipeline task
on Vertex has no such mount.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainpool.cluster_env import gcs
from trainpool.cluster_env.gcs import LOCAL_ROOT_ENV
from trainpool.config import emulator_host
from trainpool.emulator_client import served_by


def local_root(environ: Mapping[str, str] | None = None) -> Path | None:
    """The folder that stands for Cloud Storage on this machine, or None (the real one).

    With an emulator named and no storage endpoint, the emulator's own store (asked, never
    guessed from ``TRAINPOOL_HOME``)."""
    env = os.environ if environ is None else environ
    if env.get(LOCAL_ROOT_ENV):
        return Path(env[LOCAL_ROOT_ENV])
    host = emulator_host(env)
    if host and not env.get("STORAGE_EMULATOR_HOST"):
        return _served_gcs(host)
    return None


@functools.lru_cache(maxsize=8)
def _served_gcs(address: str) -> Path:
    return served_by(address).home.gcs


def _blob(uri: str) -> Any:
    from google.cloud import storage  # type: ignore[attr-defined]

    bucket, name = gcs.split(uri)
    return storage.Client().bucket(bucket).blob(name)


def exists(uri: str) -> bool:
    """Whether the object ``uri`` exists."""
    root = local_root()
    if root is not None:
        return Path(gcs.to_path(uri, root)).is_file()
    return bool(_blob(uri).exists())


def read(uri: str) -> bytes:
    """The bytes of the object ``uri``; FileNotFoundError naming it when there is none."""
    root = local_root()
    if root is not None:
        path = Path(gcs.to_path(uri, root))
        if not path.is_file():
            raise FileNotFoundError(f"{uri}: no such object (looked in the local store, {path})")
        return path.read_bytes()
    from google.api_core.exceptions import NotFound

    try:
        data: bytes = _blob(uri).download_as_bytes()
    except NotFound as err:
        raise FileNotFoundError(f"{uri}: no such object in Cloud Storage") from err
    return data


def write(uri: str, data: bytes, content_type: str = "application/octet-stream") -> None:
    """Create or replace the object ``uri`` (written whole, then renamed, locally)."""
    root = local_root()
    if root is not None:
        path = Path(gcs.to_path(uri, root))
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        partial.write_bytes(data)
        partial.replace(path)
        return
    _blob(uri).upload_from_string(data, content_type=content_type)


def bucket_exists(uri: str) -> bool:
    """Whether the bucket of ``uri`` exists (locally: its folder in the store)."""
    bucket, _ = gcs.split(uri)
    root = local_root()
    if root is not None:
        return (root / bucket).is_dir()
    from google.cloud import storage  # type: ignore[attr-defined]

    return bool(storage.Client().bucket(bucket).exists())
