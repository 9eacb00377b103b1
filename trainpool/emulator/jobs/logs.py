"""A job's logs: the emulator's own notes (``job.log``) written, every log read or followed.

Files (:class:`trainpool.home.JobFiles`): ``<root>/jobs/<id>/job.log`` (the emulator's
notes: warnings and decisions, one timestamped line each), ``workerpoolP-I.log`` per
replica, and for a sweep ``trial-<n>/`` with the same files per trial. A line is shown
with its source: ``[workerpool1-0]`` or ``[trial-2/workerpool0-0]``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

from trainpool.home import JobFiles
from trainpool.redirect.files import append


class JobLog:
    """Appends the emulator's notes on one job to its ``job.log``: a note of several lines
    (a stand-in's packages) is one write, each of its lines stamped alike.

    Three system calls a note (open, write, close): Python's text ``open(path, "a")`` adds
    four more (``fstat``, ``ioctl``, two ``lseek``), and each gives up the GIL and waits for
    it again, which on a busy emulator costs more than the write (a trial's start wrote
    about 40 lines so: the benchmarks page, per-trial overhead)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, message: str) -> None:
        stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        append(self.path, "".join(f"{stamp} {line}\n" for line in message.split("\n")))


def source(files: JobFiles, path: Path) -> str:
    return str(path.relative_to(files.dir).with_suffix(""))


def read(files: JobFiles) -> Iterator[str]:
    """Every line of every log file, prefixed with its source."""
    for path in files.log_files():
        name = source(files, path)
        for line in path.read_text(errors="replace").splitlines():
            yield f"[{name}] {line}"


def follow(files: JobFiles, finished: Callable[[], bool], poll_s: float = 0.2) -> Iterator[str]:
    """Lines as they are written, until ``finished()`` and nothing more is left to read.

    A partial last line is held back while the job runs and shown once it has ended
    (a replica that died mid-line leaves no final newline).
    """
    offsets: dict[Path, int] = {}
    while True:
        done = finished()
        for path in files.log_files():
            with open(path, "rb") as handle:
                handle.seek(offsets.get(path, 0))
                chunk = handle.read()
            complete = chunk if done else chunk[: chunk.rfind(b"\n") + 1]
            if not complete:
                continue
            offsets[path] = offsets.get(path, 0) + len(complete)
            name = source(files, path)
            for line in complete.decode("utf-8", "replace").splitlines():
                yield f"[{name}] {line}"
        if done:
            return
        time.sleep(poll_s)
