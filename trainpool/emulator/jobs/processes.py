"""Replica processes: each one in its own process group, with its own log file.

Stopping a replica signals its whole group (SIGTERM, then SIGKILL after a grace
period), so the children a trainer starts (data loaders, spawned workers) go too.

No replica outlives the emulator, SIGKILL included: replicas are started by
:mod:`trainpool.emulator.jobs.spawner`, as children of one guard process
(``replica_guard.py``) that dies with the emulator and SIGKILLs their groups. A
:class:`Replica` learns its exit from the guard and tells whoever listens
(:meth:`Replica.on_exit`), so nothing polls a process.

Nothing is signalled that cannot be proven ours: a group is signalled only while
its leader is the process that was started (same pid, same start time in
``/proc/PID/stat``, same boot id), never a process that reused the pid.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainpool.cluster_env.gcs import VERTEX_MOUNT
from trainpool.emulator.jobs.container_specs import ContainerLaunch
from trainpool.emulator.jobs.workdirs import Workdir

TERMINATE_GRACE_S = 2.0
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


@dataclass(frozen=True)
class ProcessId:
    """A process beyond its pid: pid, start time (clock ticks since boot), boot id."""

    pid: int
    start_ticks: int
    boot_id: str


@functools.cache
def boot_id() -> str:
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
    return ProcessId(pid, int(fields[19]), boot_id())


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
    if recorded is None or recorded.boot_id != boot_id():
        return False
    current = identify(pgid)
    return current is None or current == recorded


@dataclass(frozen=True)
class Mounts:
    """One replica's mount namespace, as the replica guard makes it (:mod:`.gcs_mount`
    decides it): ``gcs`` bound on ``target``, each of ``read_only`` bound read-only onto
    itself, in a user namespace of its own too when ``user``."""

    gcs: str
    target: str = VERTEX_MOUNT
    read_only: tuple[str, ...] = ()
    user: bool = False

    def host_path(self, path: str) -> str:
        """Where ``path`` as the replica sees it lies on this machine."""
        if path == self.target or path.startswith(self.target + "/"):
            return self.gcs + path[len(self.target) :]
        return path


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
    mounts: Mounts | None = None
    """The replica's own mount namespace (``/gcs``), made as it starts; None: the host's."""
    entries: Path | None = None
    """Where each line of its output is also written as a log entry (JSON lines; the
    guard's pumps, :mod:`trainpool.emulator.jobs.replica_guard`); None: the log only."""
    web_access: str = ""
    """The URI of the replica's interactive shell (``enableWebAccess``); "" when none."""
    container: ContainerLaunch | None = None
    """The container it runs as (:mod:`.containers`); None: a process of this machine."""


class Replica:
    """A started replica: its launch, its process (pid = process group id), its identity,
    and its exit status once the guard has reaped it (128 + signal for a death by signal,
    as a container runtime reports it)."""

    def __init__(self, launch: Launch, pid: int, identity: ProcessId | None) -> None:
        self.launch = launch
        self.pid = pid
        self.identity = identity
        """Of the group's leader at start; record it to stop the group from another process."""
        self.started = time.monotonic()
        self.out_of_memory = False
        """Whether it was killed for memory (known of a container: its engine says so)."""
        self.engine_lost = ""
        """Of a container whose engine went away: the engine and what its client said (the job
        fails naming it; nothing is restarted on an engine that is gone)."""
        self.disk_full: OSError | None = None
        """Of a container that failed while its engine's disk was full: that disk, named (the
        job fails RESOURCE_EXHAUSTED, as when the store's disk is full)."""
        self.output_lost = ""
        """What of its output the disk refused to keep, in words (:func:`output_loss`); set
        before it is reported ended: the job fails RESOURCE_EXHAUSTED, whatever its status."""
        self._status: int | None = None
        self._ended = threading.Event()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Replica], None]] = []
        if identity is not None:
            with _owned_lock:
                _owned[pid] = identity

    @property
    def pgid(self) -> int:
        return self.pid

    def exit_status(self) -> int | None:
        """None while running; the exit code, or 128 + signal number as a container reports it."""
        return self._status

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit status once it ended (None when ``timeout`` passed first)."""
        self._ended.wait(timeout)
        return self._status

    def on_exit(self, listener: Callable[[Replica], None]) -> None:
        """Call ``listener(replica)`` once it has ended (at once when it already has). It runs
        on the thread that learns of the exit, so it must be quick."""
        with self._lock:
            if not self._ended.is_set():
                self._listeners.append(listener)
                return
        listener(self)

    def ended(self, status: int) -> None:
        """Record the exit status (the spawner's reader does) and call the listeners."""
        with self._lock:
            if self._ended.is_set():
                return
            self._status = status
            self._ended.set()
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            try:
                listener(self)
            except Exception:  # noqa: BLE001 - one listener's failure stops no other
                pass


def output_loss(launch: Launch, lost: Mapping[str, Any]) -> str:
    """What a replica lost of its output, in words, from what its pump reported: ``file``
    (``log`` or ``entries``, the log entries), ``kept`` (the log's size at the first write
    the disk refused) and ``error``."""
    where = launch.log if lost.get("file") == "log" else launch.entries or launch.log
    kept = int(lost.get("kept", -1))
    held = (
        f"its log {launch.log} holds the first {kept} bytes of its output"
        if kept >= 0
        else f"its log is {launch.log}"
    )
    return (
        f"{launch.name}'s output could not all be kept ({lost.get('error')} writing {where}): "
        f"{held}; what it wrote after that was lost"
    )


def report_loss(name: str, metric_file: Path) -> str:
    """What replica ``name`` lost of its metric reports, in words; "" when its metric file is
    whole (absent, or ending with a whole line). cloudml-hypertune rewrites the file with
    every report (``open(path, 'w')``, its last 100 reports), so a write the disk refused
    leaves it empty or cut short: the reports it held before are gone with it."""
    try:
        text = metric_file.read_bytes()  # 100 reports at most
    except OSError:
        return ""
    if text.endswith(b"\n"):
        return ""
    whole = text.count(b"\n")
    held = f"holds {whole} whole report(s) and a cut-short line" if text else "is empty"
    return (
        f"{name}'s hyperparameter tuning metric reports could not be kept: its metric file "
        f"{metric_file} {held} ({len(text)} bytes); the reports it held were lost with it"
    )


def check_executable(launch: Launch) -> None:
    """Raise as ``Popen`` would for a program that cannot start (the guard starts it later)."""
    program = launch.argv[0] if launch.argv else ""
    if launch.mounts is not None:  # a path under /gcs lies in the emulator's store here
        program = launch.mounts.host_path(program)
    if os.sep in program:
        found = str(launch.cwd / program) if not os.path.isabs(program) else program
        if not os.path.isfile(found):
            raise FileNotFoundError(2, "No such file or directory", program)
        if not os.access(found, os.X_OK):
            raise PermissionError(13, "Permission denied", program)
    elif shutil.which(program, path=launch.env.get("PATH", os.defpath)) is None:
        raise FileNotFoundError(2, "No such file or directory", program)


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


def terminate_groups(
    groups: Sequence[int | ProcessId],
    grace_s: float | None = None,
    reap: Sequence[Replica] = (),
) -> None:
    """SIGTERM every group, wait up to ``grace_s`` (default :data:`TERMINATE_GRACE_S`, read at the
    call) for them to go, then SIGKILL what is left.

    A group is a pgid this process started, or the :class:`ProcessId` recorded when another
    (earlier) process started it; any other pgid (a stale record, a reused pid) is left alone.
    ``reap`` are the replicas of those groups: their exits are waited for, not polled.
    """
    pgids = []
    for group in groups:
        pgid, recorded = (group.pid, group) if isinstance(group, ProcessId) else (group, None)
        if is_ours(pgid, recorded):
            pgids.append(pgid)
    grace = TERMINATE_GRACE_S if grace_s is None else grace_s
    for pgid in pgids:
        _kill(pgid, signal.SIGTERM)
    if _gone(pgids, reap, time.monotonic() + grace):
        return
    for pgid in pgids:
        _kill(pgid, signal.SIGKILL)
    _gone(pgids, reap, time.monotonic() + grace)


def _gone(pgids: list[int], reap: Sequence[Replica], deadline: float) -> bool:
    """Wait until ``deadline`` for the leaders' exits, then for every group to be empty."""
    for replica in reap:
        replica.wait(max(0.0, deadline - time.monotonic()))
    while any(group_alive(pgid) for pgid in pgids):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def _kill(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def terminate(replicas: list[Replica], grace_s: float | None = None) -> None:
    """Stop every replica's process group and reap the leaders (see :func:`terminate_groups`)."""
    terminate_groups([r.pgid for r in replicas], grace_s, reap=replicas)
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
