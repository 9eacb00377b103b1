"""GCPC's launchers started before their tasks: the imports done, the task's words not yet given.

A GCPC task is ``python3 -u -m google_cloud_pipeline_components.container.v1.<op>.launcher
ARGS``; most of its start is importing the Vertex AI SDK (about 2.5 s of CPU here; a
one-job pipeline spends more time importing than waiting for its job). On Vertex that
start is the launcher container's; locally it is the run's, once per GCPC task. So a run
whose pipeline has GCPC tasks starts each launcher process one step ahead, with the exact
environment, working directory and task guard the task will have; the process imports
the launchers the pipeline uses, then waits for one line on its stdin: the module and
arguments of its task. It then runs the module as ``-m`` runs it (``runpy``'s
``_run_module_as_main``, with ``sys.path[0]`` the working directory), and from there on it
is the task: kfp.local's output handling, its exit status, SIGTERM from the run, the guard.

A process is used only for a task whose command is exactly ``<this interpreter> -u -m
<launcher module> ...`` and whose environment and working directory equal those it was
started with; any other task starts cold, as kfp.local starts it. While it waits, it is not
a running task: the run's SIGTERM handling passes it by (:func:`interrupt.spare`), and the
run ends it when it ends. Every patch of :mod:`trainpool.redirect` reads the environment
when it is called, never at import, so importing ahead changes nothing a task sees.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from trainpool.kfprun import containers, interrupt
from trainpool.kfprun.task_guard import descendants

_CHILD = """\
import sys
for _name in sys.argv[1:]:
    try:
        __import__(_name)
    except BaseException:
        pass  # the task itself meets the same error, where it belongs
import atexit, json, os, runpy, signal, threading
_task = sys.stdin.readline()
if not _task:
    raise SystemExit(0)
_task = json.loads(_task)
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
sys.argv = [_task["module"], *_task["args"]]
sys.path[0] = os.getcwd()
_module, _code, _interrupted = _task["module"], 0, False
del _name, _task, _null, json
try:
    runpy._run_module_as_main(_module)
except SystemExit as _exit:
    if _exit.code is None or isinstance(_exit.code, int):
        _code = _exit.code or 0
    else:
        print(_exit.code, file=sys.stderr)
        _code = 1
except KeyboardInterrupt:
    sys.excepthook(*sys.exc_info())
    _interrupted = True
except BaseException:
    sys.excepthook(*sys.exc_info())
    _code = 1
threading._shutdown()
atexit._run_exitfuncs()
for _stream in (sys.stdout, sys.stderr):
    try:
        _stream.flush()
    except Exception:
        pass
if _interrupted:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
os._exit(_code & 0xFF)
"""
"""The waiting process's program (``python -u -c``): standard library only, so nothing of
trainpool is imported into the task. It ends as Python ends a program (non-daemon threads
waited for, ``atexit`` functions run, output flushed, the same exit status), then leaves
without tearing its modules down one by one: with the whole SDK imported that teardown
takes about 0.6 s here, and nothing outside the process can see it."""


def launcher_module(command: Sequence[str]) -> tuple[str, list[str]] | None:
    """``(module, args)`` of a command that is exactly ``<this interpreter> -u -m MODULE
    ARGS``, MODULE a GCPC launcher; None for anything else."""
    if len(command) < 4 or command[0] != sys.executable or list(command[1:3]) != ["-u", "-m"]:
        return None
    if not containers.LAUNCHER.fullmatch(command[3]):
        return None
    return command[3], list(command[4:])


def launcher_tasks(spec: Mapping[str, Any]) -> tuple[list[str], int]:
    """The GCPC launcher modules the compiled pipeline ``spec`` runs, and how many of its
    tasks run one (a task in a loop counted once)."""
    executors = spec.get("deploymentSpec", {}).get("executors", {})
    by_component = containers.tasks_by_component(spec)
    modules: set[str] = set()
    count = 0
    for name, component in spec.get("components", {}).items():
        container = executors.get(component.get("executorLabel", ""), {}).get("container")
        if container is None:
            continue
        command = [*container.get("command", []), *container.get("args", [])]
        found = [word for word in command if containers.LAUNCHER.fullmatch(word)]
        if found and containers.verdict(command)[0] == "launcher":
            modules.add(found[0])
            count += len(by_component.get(name, [name]))
    return sorted(modules), count


SWITCH_ENV = "TRAINPOOL_WARM_LAUNCHERS"
"""``0`` starts every GCPC task cold, as kfp.local starts it (to compare, or to rule this out)."""


class WarmLaunchers:
    """Up to ``count`` launcher processes, each started one task ahead (at most one waits),
    importing ``modules``, in ``environ`` and ``cwd``."""

    def __init__(self, modules: Sequence[str], count: int, environ: Mapping[str, str], cwd: str):
        self.modules = list(modules)
        self.left = count if self.modules and os.environ.get(SWITCH_ENV) != "0" else 0
        self.environ, self.cwd = dict(environ), cwd
        self._waiting: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> WarmLaunchers:
        with self._lock:
            self._start_one()
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _start_one(self) -> None:
        if self._waiting is not None or self.left <= 0:
            return
        self.left -= 1
        command = [sys.executable, "-u", "-c", _CHILD, *self.modules]
        try:
            process = subprocess.Popen(
                interrupt.guarded(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                bufsize=1,
                env=self.environ,
                cwd=self.cwd,
            )
        except OSError:
            return  # the task starts cold
        interrupt.spare(process.pid)
        self._waiting = process

    def run(self, command: Sequence[str], env_vars: Mapping[str, str] | None) -> int | None:
        """Run the task ``command`` in the waiting process and return its exit status, as
        kfp.local's ``run_local_subprocess`` does (its output printed line by line); None
        when the task must start cold."""
        found = launcher_module(command)
        environ = {**os.environ, **(env_vars or {})}
        here = os.path.realpath(os.getcwd())
        if found is None or environ != self.environ or here != os.path.realpath(self.cwd):
            return None
        with self._lock:
            process, self._waiting = self._waiting, None
            if process is None:
                return None
            interrupt.unspare(process.pid)
            self._start_one()  # the next GCPC task's, while this one runs
        module, args = found
        try:
            assert process.stdin is not None
            process.stdin.write(json.dumps({"module": module, "args": args}) + "\n")
            process.stdin.close()
        except OSError:  # it died while waiting: the task starts cold
            _end(process)
            return None
        return _follow(process)

    def close(self) -> None:
        with self._lock:
            process, self._waiting, self.left = self._waiting, None, 0
        if process is not None:
            interrupt.unspare(process.pid)
            _end(process)


def _follow(process: subprocess.Popen[str]) -> int:
    """kfp.local's ``run_local_subprocess`` from the Popen on: each line printed, a blank
    line after, the exit status."""
    with process:
        if process.stdout:
            for line in iter(process.stdout.readline, ""):
                print(line, end="")
            print("\n")
        return process.wait()


def _end(process: subprocess.Popen[Any]) -> None:
    """End a process that was never given a task: SIGTERM to what runs under its guard (the
    guard passes SIGTERM by, the task it waits for does not), SIGKILL after 5 s."""
    try:
        if process.stdin is not None and not process.stdin.closed:
            process.stdin.close()
    except OSError:
        pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in descendants(process.pid) + ([process.pid] if sig == signal.SIGKILL else []):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        try:
            process.wait(timeout=5)
            break
        except subprocess.TimeoutExpired:
            continue
    if process.stdout is not None:
        process.stdout.close()
