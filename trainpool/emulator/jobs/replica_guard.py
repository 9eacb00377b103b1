"""The parent of every replica: one small process per emulator that dies with it and takes
every replica's process group along.

Run as ``python -I -S replica_guard.py PARENT_PID`` (standard library only, no site, so it
starts in milliseconds, once). It asks Linux for ``SIGHUP`` when its parent dies
(``prctl(PR_SET_PDEATHSIG)``); on that signal, or when its standard input closes, it
SIGKILLs every replica's process group (the replica and everything the replica started)
and exits. A SIGKILLed emulator can run no cleanup, so this is what keeps its replicas
from outliving it.

It speaks JSON lines. On standard input, one request per replica to start: ``{"id": N,
"argv": [...], "env": {...}, "cwd": DIR, "log": FILE}``, with ``"mounts": {"gcs": DIR,
"target": "/gcs", "read_only": [DIR, ...], "user": BOOL}`` for a replica that gets a mount
namespace of its own (below). On standard output: ``{"id": N,
"pid": P, "ticks": T}`` once the replica is forked (``T``: its start time in clock ticks,
``/proc/P/stat`` field 22, read before the process can be reaped), or ``{"id": N, "error":
TEXT, "errno": E}`` when it could not be; and ``{"pid": P, "status": S}`` when replica ``P`` ended
(``S``: its wait status; with ``"lost": {"file": "log" or "entries", "kept": BYTES,
"error": TEXT}`` when the disk refused a write of its output: which file, the size of its
log then, and why). Each replica runs in a session (process group) of its own (made
before its start is reported, so the emulator can signal the group at once), with
standard input from ``/dev/null``, standard output and error appended to ``FILE``; an argv
that cannot be executed writes why to ``FILE`` and exits 127, as a shell does. With
``"umask": M``, ``FILE`` is created and the replica runs under umask ``M``: the umask of the
process that asked, as when it forks a child itself, not the guard's from its own start.

With ``mounts``, the forked child makes its own mount namespace before it executes the
replica (a user namespace too when ``user``: a user other than root may not mount
otherwise, so it maps itself to root there, as ``unshare --map-root-user`` does), makes
every mount in it private, binds each ``read_only`` directory onto itself read-only, and
binds ``gcs`` on ``target``. These are the system calls the commands ``unshare --mount
--propagation private`` and ``mount --bind`` make, made here, in the child, where the commands
would cost a start of ``unshare``, ``sh`` and one ``mount`` per bind for every replica
(about 8 ms of CPU each, against 0.1 ms). A mount that fails writes why to ``FILE`` and
exits 125, as a container runtime does when it cannot make the container.

With ``"entries": FILE``, the replica's standard output and error are pipes the guard reads
instead: every byte still goes to the log (``FILE`` of ``"log"``, as above), and every line
also becomes one JSON line of ``entries`` (``{"t": RFC 3339 time it was read, "s": "o" or
"e", "m": the line}``): what Vertex's logging agent makes of a container's output, a log
entry per line with its stream (:mod:`trainpool.emulator.cloud_logging` serves them). A
line longer than :data:`MAX_LINE` bytes is cut into several entries. Before the guard
reports a replica's exit it reads what the replica left in its pipes, so a job that has
ended has its output logged; what its orphans write later is logged as it comes. A write
the disk refuses is dropped, never fatal to the guard, and the replica's exit says so
(``"lost"``): the job then fails, naming the disk, rather than end with output missing.

Starting replicas from this one process, rather than a guard process per replica, costs a
``fork`` of a small process per replica instead of an interpreter's start, and gives the
emulator one stream of every replica's exit instead of a poll per replica.
"""

from __future__ import annotations

import ctypes
import json
import os
import selectors
import signal
import sys
import time
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME = 16384, 1 << 18, 1 << 21
_KEPT = (
    ("ST_NOSUID", MS_NOSUID),
    ("ST_NODEV", MS_NODEV),
    ("ST_NOEXEC", MS_NOEXEC),
    ("ST_NOATIME", MS_NOATIME),
    ("ST_NODIRATIME", MS_NODIRATIME),
    ("ST_RELATIME", MS_RELATIME),
)
"""A bind mount's flags that a read-only remount keeps: in a user namespace the kernel
refuses a remount that would drop a flag locked by the mount it was bound from."""
MOUNT_FAILED = 125
_RESET = ("SIGPIPE", "SIGXFSZ", "SIGXFZ", "SIGHUP", "SIGCHLD", "SIGTERM", "SIGINT")
"""Dispositions a replica gets back to their defaults (Python ignores SIGPIPE and SIGXFSZ)."""

_STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
MAX_LINE = 256 * 1024
"""The longest line one entry holds (Cloud Logging's limit on an entry is 256 KB)."""
live: set[int] = set()
selector = selectors.DefaultSelector()
pumps: dict[int, list[Pump]] = {}
"""A replica's pid -> the pumps of its standard output and error."""
guard_pid = os.getpid()
_libc: ctypes.CDLL | None = None


def _kill_all(*_: object) -> None:
    for pid in list(live):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(0)


def _die_with_parent(parent: int) -> None:
    global _libc
    signal.signal(signal.SIGHUP, _kill_all)
    try:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGHUP, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: no parent-death signal
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        _kill_all()


def _send(message: dict[str, object]) -> None:
    data = (json.dumps(message) + "\n").encode()
    try:
        while data:
            data = data[os.write(1, data) :]
    except OSError:  # the emulator is gone
        _kill_all()


def _ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return -1


def _call(what: str, result: int) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str, target: str, flags: int) -> None:
    assert _libc is not None
    _call(
        f"mount {source} on {target}",
        _libc.mount(source.encode(), target.encode(), None, flags, None),
    )


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _namespace(mounts: dict[str, object]) -> None:
    """In the forked child: a mount namespace of its own with ``mounts`` (module docstring)."""
    if _libc is None:
        raise OSError(0, "mount namespaces need Linux")
    uid, gid = os.getuid(), os.getgid()
    user = bool(mounts.get("user"))
    _call("unshare", _libc.unshare(CLONE_NEWNS | (CLONE_NEWUSER if user else 0)))
    if user:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
    _mount("none", "/", MS_REC | MS_PRIVATE)
    for path in mounts.get("read_only") or ():  # type: ignore[attr-defined]
        _mount(str(path), str(path), MS_BIND)
        kept = os.statvfs(str(path)).f_flag
        flags = sum(ms for st, ms in _KEPT if kept & getattr(os, st, 0))
        _mount(str(path), str(path), MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
    _mount(str(mounts["gcs"]), str(mounts["target"]), MS_BIND)


class Loss:
    """The first write of one replica's output the disk refused: which file (``log``, or
    ``entries``, its log entries), ``log_size()`` then (-1 where it cannot be read), and why;
    None in :attr:`lost` while none was. Shared with the container follower
    (:mod:`.containers`)."""

    def __init__(self, log_size: Callable[[], int]) -> None:
        self.log_size = log_size
        self.lost: dict[str, object] | None = None

    def note(self, err: OSError | None, what: str) -> None:
        """Record ``err``, a refused write of file ``what``, when it is the first."""
        if err is None or self.lost is not None:
            return
        try:
            kept = self.log_size()
        except (OSError, ValueError):  # ValueError: a closed file's fileno()
            kept = -1
        self.lost = {"file": what, "kept": kept, "error": err.strerror or str(err)}


class Pump:
    """One stream of one replica: its pipe's read end, read into the log and the entries."""

    def __init__(self, fd: int, stream: str, log: int, entries: int) -> None:
        self.fd, self.stream, self.log, self.entries = fd, stream, log, entries
        self.pending = b""
        self.loss = Loss(lambda: os.fstat(self.log).st_size)
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ, self)

    def read(self) -> bool:
        """Read what is there; False once the pipe has ended (the pump is then closed)."""
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return True
            except OSError:
                chunk = b""
            if not chunk:
                self._lines(self.pending, final=True)
                self.close()
                return False
            self._keep(self.log, chunk, "log")
            self._lines(self.pending + chunk)

    def _lines(self, data: bytes, final: bool = False) -> None:
        out, self.pending = entry_lines(self.stream, data, final)
        if out:
            self._keep(self.entries, out, "entries")

    def _keep(self, fd: int, data: bytes, what: str) -> None:
        self.loss.note(_write_all(fd, data), what)

    def close(self) -> None:
        try:
            selector.unregister(self.fd)
        except (KeyError, ValueError):
            pass
        os.close(self.fd)
        os.close(self.log)
        os.close(self.entries)


def entry_lines(stream: str, data: bytes, final: bool = False) -> tuple[bytes, bytes]:
    """The whole lines of ``data`` as log entries of ``stream`` ("o" or "e"), a JSON line each
    and a line longer than :data:`MAX_LINE` cut into several, and the unfinished rest (none
    when ``final``). Shared with the container runner (:mod:`.containers`)."""
    *lines, rest = data.split(b"\n")
    if final and rest:
        lines.append(rest)
        rest = b""
    while len(rest) > MAX_LINE:
        lines.append(rest[:MAX_LINE])
        rest = rest[MAX_LINE:]
    if not lines:
        return b"", rest
    stamp = now_rfc3339()
    out = []
    for line in lines:
        for start in range(0, max(len(line), 1), MAX_LINE):
            text = line[start : start + MAX_LINE].decode("utf-8", "replace")
            out.append(json.dumps({"t": stamp, "s": stream, "m": text}) + "\n")
    return "".join(out).encode(), rest


def now_rfc3339() -> str:
    """This moment in RFC 3339, to the microsecond, as log entries carry it."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"


def _write_all(fd: int, data: bytes) -> OSError | None:
    """Write ``data`` whole; a full disk or any other refusal drops it (never the guard) and
    is returned, for the replica's exit to report."""
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError as err:
        return err
    return None


def _pipes(request: dict[str, object], log: int) -> tuple[list[int], list[Pump]] | None:
    """The replica's stdout and stderr write ends and the guard's pumps of them, when the
    request asks for entries; None otherwise (output straight to the log)."""
    if not request.get("entries"):
        return None
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
    entries = os.open(str(request["entries"]), flags, 0o666)
    ends: list[int] = []
    pumps: list[Pump] = []
    for stream in ("o", "e"):
        read, write = os.pipe2(os.O_CLOEXEC)
        ends.append(write)
        pumps.append(Pump(read, stream, os.dup(log), os.dup(entries)))
    os.close(entries)
    return ends, pumps


def _child(request: dict[str, object], log: int, ready: int, ends: list[int] | None = None) -> None:
    """In the forked child: a session of its own, the log as output, then exec."""
    argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
    try:
        os.setsid()
        os.close(ready)  # the guard reports the start once the group exists
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(ends[0] if ends else log, 1)
        os.dup2(ends[1] if ends else log, 2)
        signal.set_wakeup_fd(-1)
        for name in _RESET:
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())  # a stop sent since the fork lands now
        if request.get("mounts"):
            try:
                _namespace(request["mounts"])  # type: ignore[arg-type]
            except OSError as err:
                os.write(2, f"cannot make the replica's mounts: {err.strerror or err}\n".encode())
                os._exit(MOUNT_FAILED)
        os.chdir(str(request["cwd"]))
        env = {str(k): str(v) for k, v in request["env"].items()}  # type: ignore[attr-defined]
        os.execvpe(argv[0], argv, env)
    except BaseException as err:  # noqa: BLE001 - reported in the replica's log
        try:
            os.write(2, f"cannot start {argv[0] if argv else ''!r}: {err}\n".encode())
        finally:
            os._exit(127)


def _start(request: dict[str, object]) -> None:
    if isinstance(request.get("umask"), int):  # the asking process's, as if it had forked
        os.umask(request["umask"])  # type: ignore[arg-type]
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
        log = os.open(str(request["log"]), flags, 0o666)
        piped = _pipes(request, log)
    except OSError as err:
        _send({"id": request["id"], "error": err.strerror or str(err), "errno": err.errno})
        return
    ends, streams = piped if piped is not None else (None, [])
    # Blocked across the fork: a SIGTERM sent to the new group before the child has reset
    # the guard's dispositions (SIGTERM ignored) waits, instead of being lost.
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    wait_r, ready = os.pipe()
    try:
        pid = os.fork()
    except OSError as err:
        os.close(log)
        os.close(ready)
        os.close(wait_r)
        for end in ends or ():
            os.close(end)
        for pump in streams:
            pump.close()
        _send({"id": request["id"], "error": err.strerror or str(err), "errno": err.errno})
        return
    finally:
        if os.getpid() == guard_pid:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
    if pid == 0:
        os.close(wait_r)
        _child(request, log, ready, ends)
    os.close(ready)
    for end in ends or ():
        os.close(end)
    os.read(wait_r, 1)  # end of file once the child is in its own session (or gone)
    os.close(wait_r)
    os.close(log)
    live.add(pid)
    if streams:
        pumps[pid] = streams
    _send({"id": request["id"], "pid": pid, "ticks": _ticks(pid)})


def _reap() -> None:
    while live:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        live.discard(pid)
        streams = pumps.pop(pid, [])
        for pump in streams:  # what it wrote before it ended is logged first
            if pump.fd in selector.get_map():
                pump.read()
        ended: dict[str, object] = {"pid": pid, "status": status}
        lost = [pump.loss.lost for pump in streams if pump.loss.lost is not None]
        if lost:
            ended["lost"] = lost[0]
        _send(ended)


def main(argv: list[str]) -> None:
    _die_with_parent(int(argv[0]))
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)  # the emulator ends the guard by closing its input
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector.register(0, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    pending = b""
    while True:
        for key, _ in selector.select():
            if isinstance(key.data, Pump):
                key.data.read()
                continue
            if key.fd == wake_r:
                os.read(wake_r, 4096)
                continue
            chunk = os.read(0, 1 << 16)
            if not chunk:
                _kill_all()
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    _start(json.loads(line))
        _reap()


if __name__ == "__main__":
    main(sys.argv[1:])
