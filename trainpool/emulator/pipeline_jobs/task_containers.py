"""Pipeline tasks as containers of their images, where a container engine answers.

On Vertex AI Pipelines every task is a container of its component's image. With a container
engine (:mod:`trainpool.emulator.jobs.containers`), a local run's task whose image the engine
has, or can be given (a base with an offline stand-in: ``python:3.11-slim``, Vertex's prebuilt
images, :func:`trainpool.emulator.jobs.engine_images.ensure_image`), runs as a container of
it, through the same runner as a job's replicas (:class:`~trainpool.emulator.jobs.
containers.ContainerRunner`: labelled, waited on, then removed; never ``auto_remove``,
kfp.local's ``DockerRunner`` trap, where a container gone before ``wait()`` counts as exit 0):

- its command as kfp.local resolved it (a lightweight component's kfp bootstrap, ``pip
  install kfp==...`` then ``kfp.dsl.executor_main``, runs inside, from the package index);
- the task's variables (the emulator's address, the storage door, the HTTPS proxy and its
  CA: :mod:`trainpool.kfp_local.task_env`) over the image's own ``PATH``;
- the host's network, ``/gcs`` the local store read-write, the run's folder and the task's
  HOME read-write at their own paths, the store and the paths its variables name read-only
  at theirs (the emulator's socket, the CA bundle, Google's client hook);
- its output in the task's log and the run's transcript, line by line, as for a sandbox.

A task of trainpool's own components image is a container of its dependencies' image with
this checkout's trainpool bound read-only (:mod:`.components_image`). Every other task (an
image the engine cannot have) runs in its sandbox (:class:`.task_sandboxes.TaskSandboxes`),
and its log says why. Without an engine (or ``TRAINPOOL_CONTAINERS=off``) every task does.
"""

from __future__ import annotations

import io
import signal
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from trainpool.cluster_env.gcs import VERTEX_MOUNT
from trainpool.emulator.builds.engine_builds import BuildFailed
from trainpool.emulator.jobs import containers
from trainpool.emulator.jobs.container_specs import ContainerLaunch, EngineImage
from trainpool.emulator.jobs.containers import ContainerEngine, ContainerRunner
from trainpool.emulator.jobs.engine_images import ImageUnavailable, StandInFailed, ensure_image
from trainpool.emulator.jobs.launches import outside_paths
from trainpool.emulator.jobs.processes import Launch, Replica
from trainpool.emulator.pipeline_jobs import components_image
from trainpool.emulator.pipeline_jobs.task_logs import append, follow, write_notes
from trainpool.emulator.pipeline_jobs.task_python import is_components_image
from trainpool.emulator.pipeline_jobs.task_sandboxes import GRACE_S, LOG, TaskSandboxes
from trainpool.home import Home
from trainpool.images import image_store
from trainpool.kfp_local.launching import Launcher, TaskStart

HOST_ONLY = ("PATH", "PYTHONHOME", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "PWD", "OLDPWD")
"""Variables of this machine a container does not take: its image's ``PATH`` is its own."""
SYSTEM = ("/usr/", "/bin", "/sbin", "/lib", "/etc/", "/var/", "/proc", "/sys", "/dev")
"""Where a variable's path is the image's own, never bound over from this machine."""


def launcher(home: Home) -> Launcher:
    """The launcher of a local run's tasks: containers where an engine answers
    (:class:`TaskContainers`), else sandboxes."""
    sandboxes = TaskSandboxes(home)
    engine, _ = containers.connect()
    return sandboxes if engine is None else TaskContainers(sandboxes, engine)


class TaskContainers:
    """Tasks whose image the engine has or can be given as containers; the rest as
    ``sandboxes`` runs them."""

    def __init__(self, sandboxes: TaskSandboxes, engine: ContainerEngine) -> None:
        self.sandboxes = sandboxes
        self.engine = engine
        self.home = sandboxes.home
        self.runner = ContainerRunner(engine, self.home.root)
        self._images: dict[str, tuple[EngineImage | None, str]] = {}
        self._sources: dict[str, Path] = {}
        self._lock = threading.Lock()
        self._running: dict[int, Replica] = {}
        self._stopped = False

    # the Launcher protocol
    def begin(
        self, spec: Mapping[str, Any], run_dir: Path, environ: Callable[[str], dict[str, str]]
    ) -> bool:
        return self.sandboxes.begin(spec, run_dir, environ)

    def run(self, task: TaskStart, say: Callable[[str], None]) -> int:
        if self._stopped:
            return 128 + signal.SIGTERM
        image, why = self._image(task.image)
        if image is None:
            return self.sandboxes.run(task, _first(say, why) if why else say)
        folder = self.sandboxes.new_folder()
        self.sandboxes.name_folder(folder, task)
        what = f"a container of {task.image} ({image.digest}) on {self.engine.describe}"
        offset = write_notes(folder / LOG, task, say, what)
        if why:
            say(why)
            append(folder / LOG, [why])
            offset = (folder / LOG).stat().st_size
        launch = self._launch(task, image, folder)
        with self._lock:
            if self._stopped:
                return 128 + signal.SIGTERM
            try:
                replica = self.runner.start(launch)
            except OSError as err:
                said = f"cannot start the task: {err}"
                say(said)
                append(folder / LOG, [said])
                return 127
            self._running[task.task_id] = replica
        try:
            return follow(replica, folder / LOG, offset, say)
        finally:
            self._running.pop(task.task_id, None)

    def terminate(self) -> bool:
        self._stopped = True
        running = list(self._running.values())
        if running:  # from a signal handler: the engine's calls go on in a thread of their own
            thread = threading.Thread(
                target=self.runner.terminate, args=(running, GRACE_S), daemon=True
            )
            thread.start()
        return self.sandboxes.terminate() or bool(running)

    def end(self) -> None:
        self._stopped = True
        left = list(self._running.values())
        if left:
            self.runner.terminate(left, GRACE_S)
        self.sandboxes.end()

    # images and containers
    def _image(self, name: str) -> tuple[EngineImage | None, str]:
        """The engine's image ``name`` (given its stand-in first where it has one), and
        what the task's log says of it; None where the engine cannot have it (asked once per
        run)."""
        with self._lock:
            if name in self._images:
                return self._images[name]
            found = self.engine.image(name) if name else None
            why = ""
            if found is None and name and is_components_image(name):
                found, why = self._components_image(name)
            elif found is None and name and image_store.lookup(name, self.home.root) is not None:
                # an image of the local image store (`trainpool build-image DIR --local`
                # with no engine): its sandbox imitates it; never pulled by its name from a
                # registry, where someone else's image may have it
                why = f"{name}: an image of the local image store: the task runs in its sandbox"
            elif found is None and name:
                said = io.StringIO()
                try:  # pulled, else its stand-in, as `docker run` has it on a user's machine
                    ensure_image(self.engine, name, said, name)
                    found = self.engine.image(name)
                    why = said.getvalue().strip()
                except (ImageUnavailable, StandInFailed, OSError) as err:
                    why = f"{err}: the task runs in a sandbox that imitates it"
            elif found is None:
                why = "no image: the task runs in a sandbox"
            self._images[name] = (found, why)
            return found, why

    def _components_image(self, name: str) -> tuple[EngineImage | None, str]:
        """trainpool's components image: a container of its dependencies' image with this
        checkout's trainpool bound (:mod:`.components_image`), else its sandbox."""
        log = self.sandboxes.run_dir / "components-deps-build.log"
        try:
            found = components_image.recipe()
            with open(log, "a") as building:
                image = components_image.ensure(self.engine, self.home, found, building)
        except (components_image.NoRecipe, BuildFailed, OSError) as err:
            said = f"{name}: trainpool's components image: {err}: the task runs in its sandbox"
            return None, said
        self._sources[name] = found.source / "trainpool"
        built = log.stat().st_size > 0
        if not built:
            log.unlink()
        return image, (f"built for this run, its log: {log}\n" if built else "") + (
            f"{name}: trainpool's components image: a container of {image.ref} (its "
            f"dependencies, built on the engine from the root Dockerfile's FROM {found.base} and "
            f"constraints.txt) with this checkout's trainpool ({found.source / 'trainpool'}) "
            f"bound read-only at {components_image.SOURCE_MOUNT}: edits run without a new "
            "`trainpool publish`"
        )

    def _launch(self, task: TaskStart, image: EngineImage, folder: Path) -> Launch:
        home = folder / "home"
        home.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in task.env.items() if k not in HOST_ONLY}
        if image.env.get("PATH"):
            env["PATH"] = image.env["PATH"]
        env["HOME"] = str(home)
        env["PYTHONUNBUFFERED"] = "1"
        run_dir = self.sandboxes.run_dir.resolve()
        binds = [
            (str(self.home.gcs), VERTEX_MOUNT, False),
            (str(self.home.root), str(self.home.root), True),
            (str(run_dir), str(run_dir), False),
            (str(folder.resolve()), str(folder.resolve()), False),
        ]
        source = self._sources.get(task.image)
        if source is not None:  # trainpool's components image: this checkout's trainpool
            binds.append((str(source), f"{components_image.SOURCE_MOUNT}/trainpool", True))
            env["PYTHONPATH"] = components_image.SOURCE_MOUNT
            # a folder this machine sees at the same path: a build's context tarball handed
            # to the emulator's engine (trainpool.images.image_store_backend.EngineBackend)
            (folder / "tmp").mkdir(exist_ok=True)
            env["TMPDIR"] = str((folder / "tmp").resolve())
        named = {k: v for k, v in env.items() if k not in ("PATH", "PYTHONPATH")}
        binds += [
            (p, p, True)
            for p in outside_paths(named, [b[0] for b in binds])
            if not p.startswith(SYSTEM)
        ]
        labels = {"org.trainpool.task": task.name, "org.trainpool.replica": f"task-{task.task_id}"}
        return Launch(
            task.name or "task",
            0,
            list(task.command),
            env,
            folder,
            folder / LOG,
            container=ContainerLaunch(image, list(task.command), None, tuple(binds), labels),
        )


def _first(say: Callable[[str], None], line: str) -> Callable[[str], None]:
    """``say`` that says ``line`` before the first line it is given."""
    said = [False]

    def first(text: str) -> None:
        if not said[0]:
            said[0] = True
            say(line)
        say(text)

    return first
