"""A root is its owner's alone: no other local user reads the records, logs or objects.

The database holds every job's environment values (API keys among them), the job logs hold
what the trainers print, and the store holds the trainers' code and data. :func:`make_private`
runs before anything else at start: the emulator process's umask becomes at least 0o077, so
every file it, its replicas and their children create is 0600 (folders 0700); the root is
made 0700, so nothing in it can be reached by path by another user whatever its own mode;
and what an older version left readable at the top of the root (the database and its
``-wal``/``-shm``, the lock, the logs' folders) loses its group and other bits.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from trainpool.home import Home

OWNER_ONLY = 0o077
"""The umask bits the emulator process always sets: nothing for group or others."""


def restrict_umask() -> None:
    """Add :data:`OWNER_ONLY` to this process's umask (inherited by every child)."""
    current = os.umask(OWNER_ONLY)
    os.umask(current | OWNER_ONLY)


def _owner_only(path: Path) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode) or st.st_uid != os.geteuid():
        return  # a link's own mode means nothing; another user's file is not ours to change
    if stat.S_IMODE(st.st_mode) & OWNER_ONLY:
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~OWNER_ONLY)


def make_private(root: Path) -> None:
    """Make ``root`` (created when missing) and what is at its top its owner's only."""
    restrict_umask()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    home = Home(root)
    try:
        os.chmod(root, 0o700)
    except PermissionError as err:
        raise PermissionError(
            f"root: {root}: cannot make it its owner's only (mode 0700): {err.strerror}; "
            "accepted: a folder you own"
        ) from None
    for path in (
        home.database,
        home.database.with_name(home.database.name + "-wal"),
        home.database.with_name(home.database.name + "-shm"),
    ):
        _owner_only(path)
    for entry in root.iterdir():
        _owner_only(entry)
