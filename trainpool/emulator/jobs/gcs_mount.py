"""Cloud Storage at ``/gcs/BUCKET/...`` inside a replica, as Vertex's FUSE mount gives it.

Vertex mounts Cloud Storage with Cloud Storage FUSE at ``/gcs/`` in every replica
(https://cloud.google.com/vertex-ai/docs/training/code-requirements, "Cloud Storage
FUSE"); trainer code written for Vertex often rewrites ``gs://`` to ``/gcs/`` and reads and
writes there. Locally each replica runs in a private mount namespace of its own where the
emulator's ``<root>/gcs`` is bind-mounted on ``/gcs`` (``unshare --mount`` as root, else a
user namespace ``unshare -Urm`` where the kernel allows it). Nothing is mounted for the
rest of the machine, so two emulators on different roots never see each other's buckets.
``/gcs`` itself must exist as an empty mount point: as root the emulator creates it.
Where none of this is possible, replicas run without ``/gcs`` and the job log says why.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from trainpool.cluster_env.gcs import VERTEX_MOUNT

_BIND = 'mount --bind "$0" ' + VERTEX_MOUNT + ' && exec "$@"'


@dataclass(frozen=True)
class Mount:
    """``prefix`` wraps a replica's argv to give it ``/gcs``; empty, with ``why``, if it can't."""

    prefix: tuple[str, ...]
    why: str = ""

    def wrap(self, argv: list[str], gcs_root: Path) -> list[str]:
        if not self.prefix:
            return argv
        return [*self.prefix, "sh", "-c", _BIND, str(gcs_root), *argv]


def _unshare() -> tuple[str, ...]:
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    if os.geteuid() == 0:
        return (unshare, "--mount", "--propagation", "private", "--")
    return (unshare, "--user", "--map-root-user", "--mount", "--propagation", "private", "--")


def _mount_point() -> str:
    """ "" when ``/gcs`` exists or was created; else why it cannot be."""
    if os.path.isdir(VERTEX_MOUNT):
        return ""
    if os.path.lexists(VERTEX_MOUNT):
        return f"{VERTEX_MOUNT} exists and is not a directory"
    if os.geteuid() != 0:
        return f"{VERTEX_MOUNT} does not exist and only root can create it (mkdir {VERTEX_MOUNT})"
    try:
        os.mkdir(VERTEX_MOUNT)
    except OSError as err:
        return f"cannot create the mount point {VERTEX_MOUNT}: {err}"
    return ""


@functools.cache
def mount() -> Mount:
    """How replicas get ``/gcs`` on this machine, probed once per process."""
    prefix = _unshare()
    if not prefix:
        return Mount((), "the `unshare` command (util-linux) is not installed")
    missing = _mount_point()
    if missing:
        return Mount((), missing)
    with tempfile.TemporaryDirectory() as probe:
        argv = Mount(prefix).wrap(["test", "-d", VERTEX_MOUNT], Path(probe))
        result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        detail = result.stderr.strip() or f"exit status {result.returncode}"
        return Mount((), f"a private mount namespace is not allowed here ({detail})")
    return Mount(prefix)
