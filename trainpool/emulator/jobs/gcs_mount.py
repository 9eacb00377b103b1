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

In the same namespace the stores a replica must not change (the local image store, the
prebuilt-container environments) are bound read-only onto themselves: a job never
writes into a stored image (each replica works in a copy, :mod:`.workdirs`).
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

_BIND = (
    'gcs=$1; shift; while [ "$1" != -- ]; do '
    'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 125; shift; done; '
    'shift; mount --bind "$gcs" ' + VERTEX_MOUNT + ' && exec "$@"'
)
"""``sh -c _BIND NAME GCS_ROOT [READ_ONLY...] -- ARGV...``: the read-only binds, then
``/gcs``, then the replica's own program."""


@dataclass(frozen=True)
class Mount:
    """``prefix`` wraps a replica's argv to give it ``/gcs``; empty, with ``why``, if it can't."""

    prefix: tuple[str, ...]
    why: str = ""
    read_only_why: str = ""
    """Why stores cannot be bound read-only here ("" when they can)."""

    def wrap(self, argv: list[str], gcs_root: Path, read_only: tuple[Path, ...] = ()) -> list[str]:
        """``argv`` run with ``gcs_root`` on ``/gcs`` and each existing ``read_only``
        directory bound read-only onto itself."""
        if not self.prefix:
            return argv
        kept = [] if self.read_only_why else [str(p) for p in read_only if p.is_dir()]
        return [
            *self.prefix,
            "sh",
            "-c",
            _BIND,
            "trainpool-replica",
            str(gcs_root),
            *kept,
            "--",
        ] + [*argv]


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
    failed = _probe(Mount(prefix), f"test -d {VERTEX_MOUNT}", read_only=False)
    if failed:
        return Mount((), f"a private mount namespace is not allowed here ({failed})")
    failed = _probe(Mount(prefix), f"test -d {VERTEX_MOUNT}", read_only=True)
    if failed:
        return Mount(prefix, read_only_why=f"a read-only bind mount failed ({failed})")
    return Mount(prefix)


def _probe(mount: Mount, check: str, *, read_only: bool) -> str:
    """ "" when ``check`` passes in a replica's namespace (and, with ``read_only``, a
    directory bound read-only cannot be written); else what went wrong."""
    with tempfile.TemporaryDirectory() as probe:
        locked = Path(probe, "read-only")
        locked.mkdir()
        if read_only:
            check += f" && ! touch {locked}/x 2>/dev/null"
        argv = mount.wrap(["sh", "-c", check], Path(probe), (locked,) if read_only else ())
        result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        return result.stderr.strip() or f"exit status {result.returncode}"
    return ""
