"""Cloud Storage at ``/gcs/BUCKET/...`` inside a replica, as Vertex's FUSE mount gives it.

Vertex mounts Cloud Storage with Cloud Storage FUSE at ``/gcs/`` in every replica
(https://cloud.google.com/vertex-ai/docs/training/code-requirements, "Cloud Storage
FUSE"); trainer code written for Vertex often rewrites ``gs://`` to ``/gcs/`` and reads and
writes there. Locally each replica runs in a private mount namespace of its own where the
emulator's ``<root>/gcs`` is bind-mounted on ``/gcs`` (a mount namespace as root, else a
user namespace too where the kernel allows it, as ``unshare --mount`` and ``unshare -Urm``
make them). The replica guard's child makes them before it executes the replica
(:mod:`.replica_guard`). Nothing is mounted for the rest of the machine, so two emulators
on different roots never see each other's buckets. ``/gcs`` itself must exist as an empty
mount point: as root the emulator creates it. Where none of this is possible, replicas run
without ``/gcs`` and the job log says why.

In the same namespace the stores a replica must not change (the local image store, the
prebuilt containers' stand-ins) are bound read-only onto themselves: a job never
writes into a stored image (each replica works in a copy, :mod:`.workdirs`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from trainpool.cluster_env.gcs import VERTEX_MOUNT
from trainpool.emulator.jobs import spawner
from trainpool.emulator.jobs.processes import Launch, Mounts


@dataclass(frozen=True)
class Mount:
    """How replicas get ``/gcs`` on this machine: ``why`` not, when they cannot."""

    why: str = ""
    read_only_why: str = ""
    """Why stores cannot be bound read-only here ("" when they can)."""
    user: bool = False
    """Whether a replica needs a user namespace to mount (the emulator does not run as root)."""

    def mounts(self, gcs_root: Path, read_only: tuple[Path, ...] = ()) -> Mounts | None:
        """A replica's mounts: ``gcs_root`` on ``/gcs`` and each existing ``read_only``
        directory bound read-only onto itself; None where replicas run without ``/gcs``."""
        if self.why:
            return None
        kept = () if self.read_only_why else tuple(str(p) for p in read_only if p.is_dir())
        return Mounts(str(gcs_root), read_only=kept, user=self.user)


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
    if not sys.platform.startswith("linux"):
        return Mount("mount namespaces need Linux")
    missing = _mount_point()
    if missing:
        return Mount(missing)
    user = os.geteuid() != 0
    failed = _probe(Mount(user=user), read_only=False)
    if failed:
        return Mount(f"a private mount namespace is not allowed here ({failed})")
    failed = _probe(Mount(user=user), read_only=True)
    if failed:
        return Mount(read_only_why=f"a read-only bind mount failed ({failed})", user=user)
    return Mount(user=user)


def _probe(mount: Mount, *, read_only: bool) -> str:
    """ "" when a replica started as every replica is (:mod:`.spawner`) sees ``/gcs`` bound
    (and, with ``read_only``, cannot write a directory bound read-only); else what went
    wrong."""
    with tempfile.TemporaryDirectory() as probe:
        gcs, locked = Path(probe, "gcs"), Path(probe, "read-only")
        gcs.mkdir()
        locked.mkdir()
        (gcs / "bound").touch()
        check = f"test -e {VERTEX_MOUNT}/bound"
        if read_only:
            check += f" && ! touch {locked}/x 2>/dev/null"
        mounts = mount.mounts(gcs, (locked,) if read_only else ())
        log = Path(probe, "log")
        launch = Launch("probe", 0, ["sh", "-c", check], dict(os.environ), Path(probe), log)
        try:
            status = spawner.start(dataclasses.replace(launch, mounts=mounts)).wait(30)
        except OSError as err:
            return str(err)
        if status != 0:
            return log.read_text(errors="replace").strip() or f"exit status {status}"
    return ""
