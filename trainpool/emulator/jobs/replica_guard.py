"""The parent of one replica: it dies with the emulator and takes the replica's group along.

Run as ``python -I -S replica_guard.py PARENT_PID ARGV...`` (standard library only, no
site, so it starts in milliseconds). It asks Linux for ``SIGHUP`` when its parent
dies (``prctl(PR_SET_PDEATHSIG)``), and on that signal SIGKILLs its whole process
group: the replica and everything the replica started. A SIGKILLed emulator can run
no cleanup, so this is what keeps its replicas from outliving it.

Otherwise it waits for the replica and ends the same way (its exit code, or the
same signal), so the emulator sees the replica's own status. SIGTERM and SIGINT sent
to the group reach the replica; the guard outlives them to report its status. A
signal no process may catch (SIGKILL: the kernel's out-of-memory killer) is re-raised
as it is: its disposition is always the default, and asking to set it is an error.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
UNCATCHABLE = (signal.SIGKILL, signal.SIGSTOP)
"""Signals whose handler cannot be set (``signal.signal`` raises OSError for them)."""


def _kill_group(*_: object) -> None:
    os.killpg(0, signal.SIGKILL)


def _die_with_parent(parent: int) -> None:
    signal.signal(signal.SIGHUP, _kill_group)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGHUP, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: no parent-death signal
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        _kill_group()


def main(argv: list[str]) -> None:
    _die_with_parent(int(argv[0]))
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)  # handlers (unlike SIG_IGN) reset on exec
    child = os.fork()
    if child == 0:
        try:
            os.execvp(argv[1], argv[1:])
        except OSError as err:
            print(f"cannot start {argv[1]!r}: {err}", file=sys.stderr)
            os._exit(127)
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        killed_by = os.WTERMSIG(status)
        if killed_by not in UNCATCHABLE:
            signal.signal(killed_by, signal.SIG_DFL)
        os.kill(os.getpid(), killed_by)
        os._exit(128 + killed_by)
    os._exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main(sys.argv[1:])
