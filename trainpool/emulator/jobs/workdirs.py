"""Each replica's own files, fresh at every start, like a container's filesystem.

On Vertex every replica is a container of its own: what one writes in its working
directory (``./tmp``, a downloaded ``data.csv``) no other replica sees, the image itself
is never changed, and a restarted container starts from the image again (Kubernetes:
"During a crash, kubelet restarts the container with a clean state",
https://kubernetes.io/docs/concepts/storage/volumes/; Vertex restarts a worker "in the
same VM", "Understand the custom training service"). Locally each replica gets
``JobFiles.replica_workdir(name)``: before every start (first start, restart, retry) it
is emptied and, for an image from the local image store, filled with a copy of the
image's build context (plain files: no hard links into the store), so the replica's
working directory is its image's WORKDIR in that copy. Paths of the image (``ENV``,
``ENTRYPOINT``) that point into the stored context are moved to the copy with
:func:`relocate`. The store itself is mounted read-only for replicas where a private
mount namespace is allowed (:mod:`trainpool.emulator.jobs.gcs_mount`).

The rest of what a container's start makes new is made new with it: the replica's HOME
(emptied: ``~/.local``, where ``pip install --user`` writes, included) and its own Python
(:class:`trainpool.emulator.jobs.replica_python.Layer`), so nothing a start installs
reaches the next.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from trainpool.emulator.jobs.replica_python import Layer, remove


@dataclass(frozen=True)
class Workdir:
    """``root`` made fresh before each start: a copy of ``source`` (an image's build
    context), or empty when ``source`` is None; ``home`` emptied and ``python`` made
    anew with it when given."""

    root: Path
    source: Path | None = None
    home: Path | None = None
    python: Layer | None = None

    def fresh(self) -> None:
        remove(self.root)
        if self.source is None:
            self.root.mkdir(parents=True)
        else:
            self.root.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(self.source, self.root, symlinks=True)
        if self.home is not None:
            remove(self.home)
            self.home.mkdir(parents=True)
        if self.python is not None:
            self.python.fresh()


def _moved(path: str, old: str, new: str) -> str:
    if path == old or path.startswith(old + "/"):
        return new + path[len(old) :]
    return path


def relocate(value: str, old: Path, new: Path) -> str:
    """``value`` (a path, or ``:``-separated paths as in PATH) with paths under ``old``
    moved under ``new``; anything else unchanged."""
    return ":".join(_moved(part, str(old), str(new)) for part in value.split(":"))
