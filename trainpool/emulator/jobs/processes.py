"""Replica processes: each one in its own process group, with its own log file.

Stopping a replica signals its whole group (SIGTERM, then SIGKILL after a grace
period), so the children a trainer starts (data loaders, spawned workers) go too.

No replica outlives the emulator, SIGKILL included: each runs under
``replica_guard.py``, which Linux signals when its parent dies
(``PR_SET_PDEATHSIG``) and which then SIGKILLs the group. That signal fires when
the *thread* that started the process ends, so every start happens on one
long-lived thread of this module (:func:`start` hands the work to it).

Nothing is signalled that cannot be proven ours: a group is signalled only while
its leader is the process that was started (same pid, same start time in
``/proc/PID/stat``, same boot id), never a process that reused the pid.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from trainpool.emulator.jobs.workdirs import Workdir

STOP_GRACE_S = 2.0
GUARD = Path(__file__).with_name("replica_guard.py")
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


@dataclass(frozen=True)
class ProcessId:
    """A process beyond its pid: pid, start time (clock ticks since boot), boot id."""

    pid: int
    start_ticks: int
    boot_id: str


def _boot_id() -> str:
    try:
        return _BOOT_ID.read_text().strip()
    except OSError:
        return ""


def identify(pid: int) -> ProcessId | None:
    """The identity of live process ``pid``; None when there is none (or no ``/proc``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22 (starttime); the command name (field 2) may hold spaces and parentheses.
    fields = stat.rsplit(")", 1)[1].split()
    return ProcessId(pid, int(fields[19]), _boot_id())


_owned: dict[int, ProcessId] = {}
_owned_lock = threading.Lock()


def is_ours(pgid: int, recorded: ProcessId | None = None) -> bool:
    """Whether group ``pgid`` is still the one that was started (``recorded``, else ours here).

    True when its leader has the recorded identity, or has exited while the group lives
    on (Linux never reuses a pid that is still a process group id).
    """
    if recorded is None:
        with _owned_lock:
            recorded = _owned.get(pgid)
    if recorded is None or recorded.boot_id != _boot_id():
        return False
    current = identify(pgid)
    return current is None or current == recorded


@dataclass(frozen=True)
class Launch:
    """How to start one replica: ``name`` is Vertex's replica name, e.g. ``workerpool1-0``;
    ``workdir`` (when given) is made fresh before each start, as a container's files."""

    name: str
    pool: int
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log: Path
    workdir: Workdir | None = None


@dataclass
class Replica:
    launch: Launch
    proc: subprocess.Popen[bytes]
    started: float = field(default_factory=time.monotonic)
    identity: ProcessId | None = None
    """Of the group's leader at start; record it to stop the group from another process."""

    @property
    def pgid(self) -> int:
        return self.proc.pid

    def exit_status(self) -> int | None:
        """None while running; the exit code, or 128 + signal number as a container reports it."""
        code = self.proc.poll()
        if code is None:
            return None
        return 128 - code if code < 0 else code


class _Spawner:
    """One thread that lives as long as the process and starts every replica.

    ``PR_SET_PDEATHSIG`` fires when the starting thread ends; a job thread ends with
    its job, a trial thread with its trial, so none of them may be the parent.
    """

    def __init__(self) -> None:
        self._work: queue.SimpleQueue[tuple[Callable[[], Replica], Future[Replica]]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, make: Callable[[], Replica]) -> Replica:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="trainpool-replica-spawner", daemon=True
                )
                self._thread.start()
        done: Future[Replica] = Future()
        self._work.put((make, done))
        return done.result()

    def _loop(self) -> None:
        while True:
            make, done = self._work.get()
            try:
                done.set_result(make())
            except BaseException as err:  # noqa: BLE001 - handed to the caller
                done.set_exception(err)


_spawner = _Spawner()


def _check_executable(launch: Launch) -> None:
    """Raise as ``Popen`` would for a program that cannot start (the guard starts it later)."""
    program = launch.argv[0] if launch.argv else ""
    if os.sep in program:
        found = str(launch.cwd / program) if not os.path.isabs(program) else program
        if not os.path.isfile(found):
            raise FileNotFoundError(2, "No such file or directory", program)
        if not os.access(found, os.X_OK):
            raise PermissionError(13, "Permission denied", program)
    elif shutil.which(program, path=launch.env.get("PATH", os.defpath)) is None:
        raise FileNotFoundError(2, "No such file or directory", program)


def _spawn(launch: Launch) -> Replica:
    launch.log.parent.mkdir(parents=True, exist_ok=True)
    guard = [sys.executable, "-I", "-S", str(GUARD), str(os.getpid())]
    with open(launch.log, "ab") as log:
        proc = subprocess.Popen(
            [*guard, *launch.argv],
            env=launch.env,
            cwd=launch.cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    replica = Replica(launch, proc, identity=identify(proc.pid))
    if replica.identity is not None:
        with _owned_lock:
            _owned[proc.pid] = replica.identity
    return replica


def start(launch: Launch) -> Replica:
    """Start ``launch`` in a new session (its own process group), output to its log file.

    It runs under the guard, so it ends when this process ends; an argv that cannot
    start raises ``OSError`` here, as ``subprocess.Popen`` would.
    """
    _check_executable(launch)
    return _spawner.run(lambda: _spawn(launch))


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
    """Signal group ``pgid`` when it is provably one this process started (see :func:`is_ours`)."""
    if not is_ours(pgid):
        return
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_groups(
    groups: Sequence[int | ProcessId],
    grace_s: float = STOP_GRACE_S,
    reap: Sequence[Replica] = (),
) -> None:
    """SIGTERM every group, wait up to ``grace_s`` for them to go, then SIGKILL what is left.

    A group is a pgid this process started, or the :class:`ProcessId` recorded when another
    (earlier) process started it; any other pgid (a stale record, a reused pid) is left alone.
    """
    proven = []
    for group in groups:
        pgid, recorded = (group.pid, group) if isinstance(group, ProcessId) else (group, None)
        if is_ours(pgid, recorded):
            proven.append(pgid)
    pgids = proven
    for pgid in pgids:
        _kill(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        for replica in reap:
            replica.proc.poll()
        if not any(group_alive(pgid) for pgid in pgids):
            return
        time.sleep(0.02)
    for pgid in pgids:
        _kill(pgid, signal.SIGKILL)
    for replica in reap:
        try:
            replica.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(group_alive(pgid) for pgid in pgids):
        time.sleep(0.02)


def _kill(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop(replicas: list[Replica], grace_s: float = STOP_GRACE_S) -> None:
    """Stop every replica's process group and reap the leaders."""
    stop_groups([r.pgid for r in replicas], grace_s, reap=replicas)
    with _owned_lock:
        for replica in replicas:
            if replica.exit_status() is not None and not group_alive(replica.pgid):
                _owned.pop(replica.pgid, None)


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
