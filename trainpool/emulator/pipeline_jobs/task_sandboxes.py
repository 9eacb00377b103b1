"""Each pipeline task in a sandbox of its own, as Vertex runs each in a container of its own.

The launcher of a local run (:class:`trainpool.kfp_local.launching.Launcher`, used by the
emulator's PipelineJobs and by ``trainpool run --local``). Each start of a task gets what a
replica of a job gets (:mod:`trainpool.emulator.jobs.launches`), by the same means:

- a Python of its own (:class:`trainpool.emulator.jobs.replica_python.Layer`), fresh, over
  its image's stand-in (:mod:`.task_python`) and the packages its kfp bootstrap asks for
  (:mod:`.task_packages`); nothing it installs reaches the emulator, another task or run;
- a fresh HOME and working directory (a copy of a local image's files);
- the local store at ``/gcs`` and the stores (the local image store too, unless no storage
  door lets a build task reach Cloud Build), its image's packages and this emulator's
  Python read-only, in a mount namespace of its own made by the replica guard
  (:mod:`trainpool.emulator.jobs.gcs_mount`, :mod:`trainpool.emulator.jobs.spawner`); the
  host's own ``/gcs`` is never written;
- its output in ``<run>/tasks/<task>_<id>/task.log``, preceded by the settings a local run
  does not apply, and streamed to the run's transcript line by line (:mod:`.task_logs`).

GCPC launchers are started one task ahead (:mod:`.warm`). On SIGTERM of the run every
running task gets SIGTERM, and SIGKILL after :data:`GRACE_S`.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainpool.cluster_env import base_env
from trainpool.emulator.jobs import gcs_mount, processes, replica_python, spawner
from trainpool.emulator.jobs.launches import emulator_python
from trainpool.emulator.jobs.processes import Launch, Mounts, Replica
from trainpool.emulator.jobs.workdirs import Workdir, relocate
from trainpool.emulator.pipeline_jobs import task_packages, task_python, warm
from trainpool.emulator.pipeline_jobs.task_logs import append, follow, write_notes
from trainpool.emulator.pipeline_jobs.task_python import TaskPython
from trainpool.errors import InputError
from trainpool.home import Home
from trainpool.kfp_local.launching import TaskStart

GRACE_S = 5.0
"""How long a task has to end after SIGTERM (a GCPC launcher cancels its job) before SIGKILL."""
LOG = "task.log"


@dataclass(frozen=True)
class Sandbox:
    """One start's files and process settings (made fresh by :meth:`TaskSandboxes._sandbox`)."""

    folder: Path
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    mounts: Mounts | None

    @property
    def log(self) -> Path:
        return self.folder / LOG


@dataclass
class _Waiting:
    """A GCPC launcher started ahead (:mod:`.warm`)."""

    replica: Replica
    sandbox: Sandbox
    fifo: Path
    env: dict[str, str]


class TaskSandboxes:
    """The launcher of a local run's tasks over the local store ``home``."""

    def __init__(self, home: Home) -> None:
        self.home = home.resolved()
        self.mount = gcs_mount.mount()
        self.stores = (
            self.home.images,
            self.home.stand_ins,
            *emulator_python(self.home.root),
        )
        self._running: dict[int, Replica] = {}
        self._stopped = False
        self._pythons: dict[tuple[str, str], TaskPython] = {}
        self._lock = threading.Lock()
        self._sandboxes = 0
        self._waiting: _Waiting | None = None
        self._warm_left = 0
        self._warm_modules: list[str] = []
        self._warm_image = ""
        self.run_dir = self.home.local_runs
        self.environ: Callable[[str], dict[str, str]] = lambda image: {}

    # the Launcher protocol
    def begin(
        self, spec: Mapping[str, Any], run_dir: Path, environ: Callable[[str], dict[str, str]]
    ) -> bool:
        self.run_dir, self.environ = run_dir, environ
        if not environ("").get("STORAGE_EMULATOR_HOST"):
            # no storage door: a build task cannot reach Cloud Build and builds into the local
            # image store itself (trainpool.images.service: backend auto), as
            # `trainpool build-image --local` does
            self.stores = tuple(store for store in self.stores if store != self.home.images)
        (run_dir / "tasks").mkdir(parents=True, exist_ok=True)
        self.home.gcs.mkdir(parents=True, exist_ok=True)  # the source of /gcs
        modules, count = warm.launcher_tasks(spec)
        if modules and os.environ.get(warm.SWITCH_ENV) != "0":
            self._warm_modules, self._warm_left = modules, count
            self._warm_image = warm.launcher_image(spec)
            self._start_waiting()
        return not self.mount.why

    def run(self, task: TaskStart, say: Callable[[str], None]) -> int:
        if self._stopped:
            return 128 + signal.SIGTERM
        found = warm.launcher_module(task.command) if task.kind == "launcher" else None
        waiting = self._take_waiting(task) if found is not None else None
        if waiting is not None and found is not None:
            sandbox = waiting.sandbox
            self._name(sandbox, task)
            offset = write_notes(sandbox.log, task, say, self._python(task, say).what)
            self._start_waiting()  # the next GCPC task's, while this one runs
            if warm.hand(waiting.replica, waiting.fifo, *found):
                return self._followed(task, waiting.replica, sandbox.log, offset, say)
            processes.terminate([waiting.replica])
        return self._cold(task, say)

    def terminate(self) -> bool:
        self._stopped = True
        running = _values(self._running)
        for replica in running:
            processes.signal_group(replica.pgid, signal.SIGTERM)
        if running:
            timer = threading.Timer(GRACE_S, _kill, [running])
            timer.daemon = True
            timer.start()
        return bool(running)

    def end(self) -> None:
        self._stopped = True
        with self._lock:
            waiting, self._waiting, self._warm_left = self._waiting, None, 0
        left = _values(self._running) + ([waiting.replica] if waiting is not None else [])
        if left:
            processes.terminate(left, grace_s=GRACE_S)

    # starts
    def _cold(self, task: TaskStart, say: Callable[[str], None]) -> int:
        folder = self.new_folder()
        python = self._python(task, say)
        self.name_folder(folder, task)
        offset = write_notes(folder / LOG, task, say, python.what)
        lines: list[str] = []

        def note(line: str) -> None:
            lines.append(line)
            say(line)

        try:
            sandbox = self._sandbox(folder, python, task.command, task.env, note)
        except InputError as err:
            note(str(err))
            append(folder / LOG, lines)
            return 1
        append(folder / LOG, lines)
        offset = (folder / LOG).stat().st_size
        with self._lock:
            if self._stopped:
                return 128 + signal.SIGTERM
            try:
                replica = spawner.start(_launch(task.name, sandbox))
            except OSError as err:
                say(f"cannot start the task: {err}")
                append(folder / LOG, [f"cannot start the task: {err}"])
                return 127
        return self._followed(task, replica, sandbox.log, offset, say)

    def _followed(
        self, task: TaskStart, replica: Replica, log: Path, offset: int, say: Callable[[str], None]
    ) -> int:
        self._running[task.task_id] = replica
        try:
            return follow(replica, log, offset, say)
        finally:
            self._running.pop(task.task_id, None)

    def _python(self, task: TaskStart, say: Callable[[str], None]) -> TaskPython:
        key = (task.image, task.kind)
        if key not in self._pythons:
            self._pythons[key] = task_python.for_image(self.home, task.image, task.kind, say)
        return self._pythons[key]

    def new_folder(self) -> Path:
        with self._lock:
            self._sandboxes += 1
            folder = self.run_dir / "tasks" / f".sandbox-{self._sandboxes}"
        folder.mkdir(parents=True)
        return folder

    def name_folder(self, folder: Path, task: TaskStart) -> None:
        """``<run>/tasks/<task>_<id>`` names the sandbox of the task's latest start."""
        link = self.run_dir / "tasks" / f"{task.name}_{task.task_id}"
        link.unlink(missing_ok=True)
        link.symlink_to(folder.name)

    def _name(self, sandbox: Sandbox, task: TaskStart) -> None:
        self.name_folder(sandbox.folder, task)

    def _sandbox(
        self,
        folder: Path,
        python: TaskPython,
        command: list[str],
        env: Mapping[str, str],
        note: Callable[[str], None],
    ) -> Sandbox:
        """A fresh sandbox in ``folder`` for ``command`` over ``python``: kfp's bootstrap
        installs made over the image (once per root), its own Python, HOME, working
        directory, variables and mounts."""
        sites = python.sites
        argv = list(command)
        found = task_packages.bootstrap(command)
        if found is not None and found[0]:
            installs, argv = found
            site = task_packages.provision(
                self.home.stand_ins, installs, sites, python.aliases, note
            )
            sites = (site, *sites)
        base = replica_python.shared_base(self.home.stand_ins / "bases", sites)
        layer = replica_python.Layer(folder / "python", base)
        workdir = Workdir(folder / "work", python.context, folder / "home", layer)
        workdir.fresh()
        cwd = workdir.root
        if python.context is not None and python.cwd is not None:
            cwd = Path(relocate(str(python.cwd), python.context, workdir.root))
        env = dict(env)
        env["HOME"] = str(folder / "home")
        rest = python.image_env.get("PATH") or base_env.DEFAULT_PATH
        env["PATH"] = os.pathsep.join([str(layer.bin), *python.path, rest])
        mounts = self.mount.mounts(self.home.gcs, (*self.stores, *python.read_only))
        return Sandbox(folder, argv, env, cwd, mounts)

    # GCPC launchers started ahead
    def _start_waiting(self) -> None:
        with self._lock:
            if self._waiting is not None or self._warm_left <= 0 or self._stopped:
                return
            self._warm_left -= 1
        folder = self.new_folder()
        task = TaskStart("", 0, self._warm_image, [], {}, "launcher")
        python = self._python(task, lambda line: None)
        env = self.environ(self._warm_image)
        fifo = folder / "task.fifo"
        try:
            sandbox = self._sandbox(folder, python, ["python3"], env, lambda line: None)
            warm.make_fifo(fifo)
            argv = warm.child_argv("python3", fifo, self._warm_modules)
            sandbox = Sandbox(folder, argv, sandbox.env, sandbox.cwd, sandbox.mounts)
            replica = spawner.start(_launch("launcher", sandbox))
        except (OSError, InputError):
            return  # the task starts cold
        with self._lock:
            self._waiting = _Waiting(replica, sandbox, fifo, dict(env))

    def _take_waiting(self, task: TaskStart) -> _Waiting | None:
        with self._lock:
            waiting = self._waiting
            if waiting is None or waiting.env != task.env:
                return None
            self._waiting = None
        if waiting.replica.exit_status() is not None:
            return None
        return waiting


def _launch(name: str, sandbox: Sandbox) -> Launch:
    return Launch(
        name or "task",
        0,
        sandbox.argv,
        sandbox.env,
        sandbox.cwd,
        sandbox.log,
        mounts=sandbox.mounts,
    )


def _values(running: dict[int, Replica]) -> list[Replica]:
    """The running tasks (read from a signal handler too: no lock, a copy that may race)."""
    for _ in range(5):
        try:
            return list(running.values())
        except RuntimeError:  # changed while copied
            continue
    return []


def _kill(replicas: list[Replica]) -> None:
    for replica in replicas:
        if replica.exit_status() is None:
            processes.signal_group(replica.pgid, signal.SIGKILL)
