"""GCPC's launchers started before their tasks: the imports done, the task's words not yet given.

A GCPC task is ``python3 -u -m google_cloud_pipeline_components.container.v1.<op>.launcher
ARGS``; most of its start is importing the Vertex AI SDK (about 2.5 s of CPU here; a
one-job pipeline spends more time importing than waiting for its job). On Vertex that
start is the launcher container's; locally it is the run's, once per GCPC task. So a run
whose pipeline has GCPC tasks starts each launcher process one step ahead, in the sandbox
(:mod:`.tasks`: its Python, HOME, working directory, mounts and variables) the task will
have; the process imports the launchers the pipeline uses, then waits on a FIFO of its
sandbox for one line: the module and arguments of its task. It then runs the module as
``-m`` runs it (``runpy``'s ``_run_module_as_main``, with ``sys.path[0]`` the working
directory), and from there on it is the task: its output, its exit status, SIGTERM from
the run.

A waiting process is used only for a task whose command is exactly ``python3 -u -m
<launcher module> ...`` and whose variables equal those it was started with; any other
task starts cold. Every patch of :mod:`trainpool.redirect` reads the environment when it is
called, never at import, so importing ahead changes nothing a task sees.
``TRAINPOOL_WARM_LAUNCHERS=0`` starts every GCPC task cold.
"""

from __future__ import annotations

import errno
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trainpool.emulator.jobs.processes import Replica
from trainpool.kfp_local import containers

CHILD = """\
import os, sys
_fd = os.open(sys.argv[1], os.O_RDWR)  # a writer of its own: reads wait for the task's line
for _name in sys.argv[2:]:
    try:
        __import__(_name)
    except BaseException:
        pass  # the task itself meets the same error, where it belongs
import atexit, json, runpy, signal, threading
_task = b""
while not _task.endswith(b"\\n"):
    _chunk = os.read(_fd, 65536)
    if not _chunk:
        raise SystemExit(0)
    _task += _chunk
os.close(_fd)
_task = json.loads(_task)
sys.argv = [_task["module"], *_task["args"]]
sys.path[0] = os.getcwd()
_module, _code, _interrupted = _task["module"], 0, False
del _name, _task, _chunk, _fd, json
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
"""The waiting process's program (``python -u -c CHILD FIFO MODULES...``): standard library
only, so nothing of trainpool is imported into the task. It ends as Python ends a program
(non-daemon threads waited for, ``atexit`` functions run, output flushed, the same exit
status), then leaves without tearing its modules down one by one: with the whole SDK
imported that teardown takes about 0.6 s here, and nothing outside the process can see it."""
SWITCH_ENV = "TRAINPOOL_WARM_LAUNCHERS"
"""``0`` starts every GCPC task cold (to compare, or to rule this out)."""
HAND_OVER_S = 30.0
"""How long a waiting process may take to finish its imports once its task has come."""


def launcher_module(command: Sequence[str]) -> tuple[str, list[str]] | None:
    """``(module, args)`` of a command that is exactly ``python3 -u -m MODULE ARGS``,
    MODULE a GCPC launcher; None for anything else."""
    if len(command) < 4 or list(command[:3]) != ["python3", "-u", "-m"]:
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


def child_argv(python: str, fifo: Path, modules: Sequence[str]) -> list[str]:
    """The waiting process: ``python`` runs :data:`CHILD`, its task to come on ``fifo``."""
    return [python, "-u", "-c", CHILD, str(fifo), *modules]


def make_fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path, 0o600)


def hand(replica: Replica, fifo: Path, module: str, args: list[str]) -> bool:
    """Give the waiting process ``replica`` its task; False when it is gone (the task then
    starts cold)."""
    line = (json.dumps({"module": module, "args": args}) + "\n").encode()
    deadline = time.monotonic() + HAND_OVER_S
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as err:  # ENXIO: it has not opened its end yet
            if err.errno != errno.ENXIO or replica.exit_status() is not None:
                return False
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
    try:
        os.set_blocking(fd, True)
        while line:
            line = line[os.write(fd, line) :]
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def launcher_image(spec: Mapping[str, Any]) -> str:
    """The image of the pipeline's first GCPC launcher task."""
    for executor in spec.get("deploymentSpec", {}).get("executors", {}).values():
        container = executor.get("container", {})
        command = [*container.get("command", []), *container.get("args", [])]
        if containers.verdict(command)[0] == "launcher":
            return str(container.get("image", ""))
    return ""
