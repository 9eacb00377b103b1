"""One emulator per root: an ``fcntl`` lock on ``<root>/emulator.lock``.

The server that holds the lock writes its pid and address (and its Cloud Storage
JSON API's, ``storage_address``, secret included, when it serves one) into the file,
mode 0600, so a second server on the same root is refused with a message naming both,
and ``trainpool run --local`` can use the running one instead of starting its own.
The kernel drops the lock when its holder dies (SIGKILL included), so a stale
file never blocks a restart.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from trainpool.home import Home

ADDRESS_WAIT_S = 5.0


class RootInUse(OSError):
    """Another live emulator serves this root."""

    def __init__(self, root: Path, address: str, pid: int | None) -> None:
        self.root, self.address, self.pid = root, address, pid
        where = address or "an address it has not published yet"
        super().__init__(
            f"root: {root} is served by the emulator at {where} (pid {pid}); "
            f"accepted: one emulator per root: use it (export VERTEX_AI_EMULATOR_HOST={address}) "
            "or give another --root"
        )


@dataclass
class RootLock:
    """The held lock of one root; :meth:`publish` the address, :meth:`release` at stop."""

    root: Path
    handle: IO[str]

    def publish(
        self, address: str, storage_address: str | None = None, rest_address: str | None = None
    ) -> None:
        """Write the pid, the gRPC address and, when served, the storage and REST doors'."""
        record: dict[str, object] = {"pid": os.getpid(), "address": address}
        if storage_address:
            record["storage_address"] = storage_address
        if rest_address:
            record["rest_address"] = rest_address
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(json.dumps(record) + "\n")
        self.handle.flush()

    def release(self) -> None:
        if self.handle.closed:
            return
        self.handle.seek(0)
        self.handle.truncate()
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def _holder(path: Path) -> tuple[str, int | None]:
    try:
        data = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return "", None
    return str(data.get("address", "")), data.get("pid")


def acquire(root: Path) -> RootLock:
    """Lock ``root`` for this server; :class:`RootInUse` when another server holds it."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = Home(root).lock
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # it holds the storage door's secret
    try:
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, 0o600)
    except OSError:
        os.close(fd)
        raise
    handle = os.fdopen(fd, "r+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise RootInUse(root, *_holder(path)) from None
    return RootLock(root, handle)


def storage_address(root: Path) -> str | None:
    """The storage door's URL (with its secret) of the live emulator serving ``root``, or
    None when none serves it or it serves no door. Only the owner can read it (mode 0600)."""
    if running(root) is None:
        return None
    try:
        data = json.loads(Home(root).lock.read_text() or "{}")
    except (OSError, ValueError):
        return None
    found = data.get("storage_address") if isinstance(data, dict) else None
    return str(found) if found else None


def running(root: Path, wait_s: float = ADDRESS_WAIT_S) -> str | None:
    """The address of the live emulator serving ``root``, or None when there is none.

    A server that holds the lock but has not published its address yet (it is starting)
    is waited for up to ``wait_s``; :class:`RootInUse` if it still has none.
    """
    path = Home(root).lock
    if not path.exists():
        return None
    deadline = time.monotonic() + wait_s
    while True:
        try:
            lock = acquire(root)
        except RootInUse as busy:
            if busy.address:
                return busy.address
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
            continue
        lock.release()
        return None
