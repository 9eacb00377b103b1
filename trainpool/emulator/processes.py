"""Replica processes: each one in its own process group, with its own log file.

Stopping a replica signals its whole group (SIGTERM, then SIGKILL after a grace
period), so the children a trainer starts (data loaders, spawned workers) go too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

STOP_GRACE_S = 2.0


@dataclass(frozen=True)
class Launch:
    """How to start one replica: ``name`` is Vertex's replica name, e.g. ``workerpool1-0``."""

    name: str
    pool: int
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log: Path


@dataclass
class Replica:
    launch: Launch
    proc: subprocess.Popen[bytes]
    started: float = field(default_factory=time.monotonic)

    @property
    def pgid(self) -> int:
        return self.proc.pid

    def exit_status(self) -> int | None:
        """None while running; the exit code, or 128 + signal number as a container reports it."""
        code = self.proc.poll()
        if code is None:
            return None
        return 128 - code if code < 0 else code


def start(launch: Launch) -> Replica:
    """Start ``launch`` in a new session (its own process group), output to its log file."""
    launch.log.parent.mkdir(parents=True, exist_ok=True)
    with open(launch.log, "ab") as log:
        proc = subprocess.Popen(
            launch.argv,
            env=launch.env,
            cwd=launch.cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Replica(launch, proc)


def group_alive(pgid: int) -> bool:
    """True while any process of group ``pgid`` exists."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_groups(
    pgids: list[int], grace_s: float = STOP_GRACE_S, reap: Sequence[Replica] = ()
) -> None:
    """SIGTERM every group, wait up to ``grace_s`` for them to go, then SIGKILL what is left."""
    for pgid in pgids:
        signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        for replica in reap:
            replica.proc.poll()
        if not any(group_alive(pgid) for pgid in pgids):
            return
        time.sleep(0.02)
    for pgid in pgids:
        signal_group(pgid, signal.SIGKILL)
    for replica in reap:
        try:
            replica.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(group_alive(pgid) for pgid in pgids):
        time.sleep(0.02)


def stop(replicas: list[Replica], grace_s: float = STOP_GRACE_S) -> None:
    """Stop every replica's process group and reap the leaders."""
    stop_groups([r.pgid for r in replicas], grace_s, reap=replicas)


def tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a log file ("" when it does not exist)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 8192))
            text = handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
