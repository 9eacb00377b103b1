"""Starting replicas, and learning of their exits, through one guard process.

:func:`start` asks the guard (:mod:`trainpool.emulator.jobs.replica_guard`, one process
per emulator process, started on first use) to fork the replica, and returns its
:class:`trainpool.emulator.jobs.processes.Replica`. One thread of this module, the
*reader*, started the guard and reads its messages: a replica forked, or a replica
ended, whose :class:`Replica` it then tells (``Replica.ended``, which calls the
listeners). So every exit of every replica reaches the emulator on one thread, as it
happens, with no poll.

The guard's ``PR_SET_PDEATHSIG`` fires when the *thread* that started it ends, so the
reader, which lives as long as the process, is the one that starts it. Should the guard
itself die, every replica it started is SIGKILLed (only groups proven ours) and reported
ended with status 137, as a container whose VM went away; the next start starts a new
guard.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any

from trainpool.emulator.jobs import processes
from trainpool.emulator.jobs.processes import Launch, ProcessId, Replica

GUARD = Path(__file__).with_name("replica_guard.py")
START_TIMEOUT_S = 30.0
LOST_STATUS = 128 + signal.SIGKILL
"""The status of a replica whose guard died: killed, as by a VM going away."""


def exit_status(wait_status: int) -> int:
    """A wait status as a container reports it: the exit code, or 128 + the signal."""
    code = os.waitstatus_to_exitcode(wait_status)
    return 128 - code if code < 0 else code


class _Guard:
    """The guard process and its reader thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[Launch, Future[Replica]]] = {}
        self._live: dict[int, Replica] = {}
        self._stdin: IO[bytes] | None = None
        self.pid: int | None = None
        self._ready: Future[None] | None = None
        self._thread: threading.Thread | None = None

    def _running(self) -> IO[bytes]:
        """The guard's input, once it runs (started by a new reader thread when need be)."""
        with self._lock:
            ended = self._ready is not None and self._ready.done() and self._stdin is None
            if self._thread is None or not self._thread.is_alive() or ended:
                self._ready = Future()
                self._thread = threading.Thread(
                    target=self._serve, name="trainpool-replica-guard", daemon=True
                )
                self._thread.start()
            ready = self._ready
        assert ready is not None
        ready.result(timeout=START_TIMEOUT_S)
        assert self._stdin is not None
        return self._stdin

    def start(self, launch: Launch) -> Replica:
        stdin = self._running()
        request: dict[str, Any] = {
            "argv": launch.argv,
            "env": launch.env,
            "cwd": str(launch.cwd),
            "log": str(launch.log),
        }
        if launch.mounts is not None:
            request["mounts"] = dataclasses.asdict(launch.mounts)
        if launch.entries is not None:
            request["entries"] = str(launch.entries)
        umask = _umask()
        if umask is not None:  # the emulator restricts its umask after the guard may have started
            request["umask"] = umask
        done: Future[Replica] = Future()
        with self._lock:
            request["id"] = number = next(self._ids)
            self._pending[number] = (launch, done)
            try:
                stdin.write(json.dumps(request).encode() + b"\n")
                stdin.flush()
            except (OSError, ValueError) as err:
                self._pending.pop(number, None)
                raise OSError(f"the replica guard process is gone: {err}") from err
        return done.result(timeout=START_TIMEOUT_S)

    def _serve(self) -> None:
        """Start the guard, then read its messages until it ends."""
        assert self._ready is not None
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(GUARD), str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as err:
            self._ready.set_exception(err)
            return
        assert proc.stdin is not None and proc.stdout is not None
        with self._lock:
            self._stdin = proc.stdin
            self.pid = proc.pid
        self._ready.set_result(None)
        for line in proc.stdout:
            self._handle(json.loads(line))
        proc.wait()
        self._lost()

    def _handle(self, message: dict[str, Any]) -> None:
        if "id" in message:
            with self._lock:
                launch, done = self._pending.pop(message["id"])
            if "error" in message:
                done.set_exception(OSError(message.get("errno") or 0, message["error"]))
                return
            pid, ticks = int(message["pid"]), int(message["ticks"])
            identity = ProcessId(pid, ticks, processes.boot_id()) if ticks >= 0 else None
            replica = Replica(launch, pid, identity)
            with self._lock:
                self._live[pid] = replica
            done.set_result(replica)
            return
        with self._lock:
            ended = self._live.pop(int(message["pid"]), None)
        if ended is not None:
            if isinstance(message.get("lost"), dict):
                ended.output_lost = processes.output_loss(ended.launch, message["lost"])
            ended.ended(exit_status(int(message["status"])))

    def _lost(self) -> None:
        """The guard ended: nothing it started may be left running or waited for."""
        with self._lock:
            pending, self._pending = self._pending, {}
            live, self._live = self._live, {}
            self._stdin = None
        for _, done in pending.values():
            done.set_exception(OSError("the replica guard process ended"))
        for replica in live.values():
            processes.signal_group(replica.pgid, signal.SIGKILL)
            replica.ended(LOST_STATUS)


def _umask() -> int | None:
    """This process's umask, read without changing it (``/proc/self/status``, Linux 4.7 and
    later; setting and restoring it would race with other threads' files); None where it
    cannot be read."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


_guard = _Guard()


def start(launch: Launch) -> Replica:
    """Start ``launch`` in a session (process group) of its own, output appended to its log.

    It is a child of the guard, so it ends when the emulator's process ends; an argv that
    cannot start raises ``OSError`` here, as ``subprocess.Popen`` would.
    """
    processes.check_executable(launch)
    launch.log.parent.mkdir(parents=True, exist_ok=True)
    if launch.entries is not None:
        launch.entries.parent.mkdir(parents=True, exist_ok=True)
    return _guard.start(launch)


def guard_pid() -> int | None:
    """The pid of the running guard process (None before the first start)."""
    return _guard.pid
