"""The parent of one pipeline task: it dies with the local run and takes the task's processes along.

Run as ``python -I -S task_guard.py PARENT_PID ARGV...`` (standard library only, no site, so it
starts in milliseconds). kfp.local starts each task (``sh -c ...`` starting Python) as a child
of the run; a SIGKILLed ``trainpool run --local`` runs no cleanup, and its tasks would go on
polling an emulator that died with it. So each task is started under this guard, which:

- asks Linux for ``SIGHUP`` when the run dies (``prctl(PR_SET_PDEATHSIG)``) and becomes the
  *subreaper* of the task's processes (``PR_SET_CHILD_SUBREAPER``: an orphaned descendant is
  re-parented to it, so it always finds them all);
- on that signal, sends SIGTERM to every descendant (a task that launched a job on an emulator
  that still runs cancels it, as on a SIGTERM of the run), SIGKILLs whatever is left after
  :data:`GRACE_S`, and exits;
- otherwise waits for the task and exits with its status. It stays in the run's process
  group, so the run's SIGTERM reaches the task as before (the guard itself outlives it to
  report the task's status).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
GRACE_S = 2.0


class _RunGone(Exception):
    """The run that started this task died."""


def _run_gone(*_: object) -> None:
    """The first SIGHUP raises :class:`_RunGone` and blocks the rest; one already pending
    when it was blocked does nothing.

    The run's death brings several: Linux sends the parent-death signal each time the guard
    is re-parented, and a SIGKILLed run re-parents it from each of its threads to the next as
    they exit. A second one raising while the first was being handled ended the guard with a
    traceback and left the task running."""
    if signal.SIGHUP not in signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP}):
        raise _RunGone  # SIGHUP was not yet blocked: this is the first


def descendants(pid: int) -> list[int]:
    """Pids of ``pid``'s descendants (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def _signal_all(sig: int) -> list[int]:
    pids = descendants(os.getpid())
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    return pids


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _end_tasks() -> None:
    """The run is gone: SIGTERM every descendant, SIGKILL what is left after the grace."""
    _signal_all(signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline:
        _reap()
        if not descendants(os.getpid()):
            os._exit(128 + signal.SIGHUP)
        time.sleep(0.05)
    _signal_all(signal.SIGKILL)
    _reap()
    os._exit(128 + signal.SIGHUP)


def main(argv: list[str]) -> None:
    parent = int(argv[0])
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)  # handlers (unlike SIG_IGN) reset on exec
    signal.signal(signal.SIGHUP, _run_gone)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGHUP, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the task runs unguarded
        os.execvp(argv[1], argv[1:])
    try:
        if os.getppid() != parent:  # the run died before prctl took effect
            raise _RunGone
        task = os.fork()
        if task == 0:
            signal.signal(signal.SIGHUP, signal.SIG_DFL)
            try:
                os.execvp(argv[1], argv[1:])
            except OSError as err:
                print(f"cannot start {argv[1]!r}: {err}", file=sys.stderr)
                os._exit(127)
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == task:
                code = os.waitstatus_to_exitcode(status)
                os._exit(128 - code if code < 0 else code)
    except _RunGone:
        _end_tasks()


if __name__ == "__main__":
    main(sys.argv[1:])
