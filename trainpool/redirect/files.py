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


def write_file(path: Path, data: bytes, flags: int, mode: int) -> None:
    """All of ``data`` to ``path``, opened for writing with ``flags`` (``os.O_CREAT``, ...)
    and, when made, at ``mode`` (less the umask); ``os.write`` may write part of it."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | flags, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def append(path: Path, text: str) -> None:
    """``text`` at the end of ``path`` (made when there is none): one write, so lines that
    other threads append at the same time never land inside it."""
    write_file(path, text.encode("utf-8"), os.O_APPEND | os.O_CREAT, 0o666)


def write_new(path: Path, text: str, mode: int) -> None:
    """A new file ``path`` holding ``text``, made at ``mode`` (less the umask); it must not
    exist."""
    write_file(path, text.encode("utf-8"), os.O_CREAT | os.O_EXCL, mode)


def write_private(path: Path, text: str) -> Path:
    """``text`` at ``path``, mode 0600 from its first byte (never readable by others): written
    to a new staging file of this thread's and renamed over it, so a run's tasks may write
    one configuration at once, and a reader sees the old file or the new one."""
    staged = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    staged.unlink(missing_ok=True)  # one a crash left: made again, at 0600
    write_file(staged, text.encode("utf-8"), os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.replace(staged, path)
    return path
