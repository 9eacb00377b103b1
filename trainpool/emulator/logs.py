"""Reading a job's log files from the emulator's root: every replica, every trial.

Files: ``<root>/jobs/<id>/job.log`` (the emulator's notes), ``workerpoolP-I.log``
per replica, and for a sweep ``trial-<n>/`` with the same files per trial. A
line is shown with its source: ``[workerpool1-0]`` or ``[trial-2/workerpool0-0]``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path


def log_files(job_dir: Path) -> list[Path]:
    """The log files of a job, job.log first, then replicas, then trials in number order."""

    def order(path: Path) -> tuple[int, ...]:
        rel = path.relative_to(job_dir)
        trial = int(rel.parts[0].split("-", 1)[1]) if len(rel.parts) > 1 else 0
        return (trial, 0 if path.name == "job.log" else 1)

    found = list(job_dir.glob("*.log")) + list(job_dir.glob("trial-*/*.log"))
    return sorted(found, key=lambda p: (*order(p), p.name))


def source(job_dir: Path, path: Path) -> str:
    return str(path.relative_to(job_dir).with_suffix(""))


def read(job_dir: Path) -> Iterator[str]:
    """Every line of every log file, prefixed with its source."""
    for path in log_files(job_dir):
        name = source(job_dir, path)
        for line in path.read_text(errors="replace").splitlines():
            yield f"[{name}] {line}"


def follow(job_dir: Path, finished: Callable[[], bool], poll_s: float = 0.2) -> Iterator[str]:
    """Lines as they are written, until ``finished()`` and nothing more is left to read.

    A partial last line is held back while the job runs and shown once it has ended
    (a replica that died mid-line leaves no final newline).
    """
    offsets: dict[Path, int] = {}
    while True:
        done = finished()
        for path in log_files(job_dir):
            with open(path, "rb") as handle:
                handle.seek(offsets.get(path, 0))
                chunk = handle.read()
            complete = chunk if done else chunk[: chunk.rfind(b"\n") + 1]
            if not complete:
                continue
            offsets[path] = offsets.get(path, 0) + len(complete)
            name = source(job_dir, path)
            for line in complete.decode("utf-8", "replace").splitlines():
                yield f"[{name}] {line}"
        if done:
            return
        time.sleep(poll_s)
