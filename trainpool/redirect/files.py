"""Files written whole, with as few system calls as it takes.

Every replica's start writes its configuration files (gcloud's, the Google clients') and
its fresh Python layer, and the job engine's threads write job logs. Each system call gives
up the GIL and, on a busy emulator, waits for it again, so these are ``os.open``, ``os.write``
and ``os.close``: a text file object would add ``fstat``, ``ioctl`` and ``lseek``.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd`` (``os.write`` may write part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_new(path: Path, text: str, mode: int) -> None:
    """A new file ``path`` holding ``text``, made at ``mode`` (less the umask); it must not
    exist."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        write_all(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def write_private(path: Path, text: str) -> Path:
    """``text`` at ``path`` (mode 0600), written to a staging file of this thread's and renamed
    over it: a run's tasks may write one configuration at once, and a reader sees the old file
    or the new one."""
    staged = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW
    fd = os.open(staged, flags, 0o600)
    try:
        write_all(fd, text.encode("utf-8"))
    finally:
        os.close(fd)
    os.replace(staged, path)
    return path
