"""Whether a stored local image is still the context its digest names.

A stored image is found by its digest (``<root>/images/<digest>/``), so whatever is in its
``context/`` folder runs as that context. Before a stored image is used again for a build
of the same context, its files are hashed again: every file the context put there must
be unchanged, and nothing else may have been added (outside ``__pycache__`` folders,
which Python writes next to the code it runs). ``image.json`` records the context's rows
and build args (:func:`trainpool.images.context.digest_of` of them must be the digest);
an image stored before that record existed cannot be checked and is rebuilt once. The
image's virtualenv is derived from the context (its requirements) and is not hashed.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

from trainpool.images.context import Row, digest_of

_CHUNK = 1 << 20


def record(rows: list[Row], build_args: dict[str, str]) -> dict[str, Any]:
    """What ``image.json`` keeps for :func:`problem`."""
    return {"entries": [list(row) for row in rows], "buildArgs": dict(build_args)}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _stored(context_dir: Path) -> set[str]:
    found = set()
    for folder, dirs, files in os.walk(context_dir):
        dirs[:] = [d for d in dirs if d != "__pycache__" or os.path.islink(os.path.join(folder, d))]
        rel = os.path.relpath(folder, context_dir)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            found.add(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
    return found


def problem(image_dir: Path, digest: str, meta: dict[str, Any]) -> str | None:
    """Why the stored image in ``image_dir`` is not the context ``digest``, or None."""
    rows = [(str(p), int(m), str(t)) for p, m, t in meta.get("entries") or []]
    if "entries" not in meta:
        return "it was stored by an older trainpool and cannot be checked"
    if digest_of(rows, meta.get("buildArgs") or {}) != digest:
        return "its record does not hash to its digest"
    context_dir = image_dir / "context"
    for path, mode, target in rows:
        file = context_dir / path
        try:
            st = os.lstat(file)
        except FileNotFoundError:
            return f"{path} is missing"
        if mode == 0o777:  # a symlink's row holds its target
            if not stat.S_ISLNK(st.st_mode) or os.readlink(file) != target:
                return f"{path} is not the link it was"
            continue
        if not stat.S_ISREG(st.st_mode) or bool(st.st_mode & stat.S_IXUSR) != bool(mode & 0o100):
            return f"{path} is not the file it was"
        if _sha256(file) != target:
            return f"{path} was changed"
    extra = sorted(_stored(context_dir) - {row[0] for row in rows})
    if extra:
        return f"{extra[0]} was added" + (f" (and {len(extra) - 1} more)" if len(extra) > 1 else "")
    return None
