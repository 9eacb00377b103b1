"""How a local run starts each task's process: the contract between the run and its launcher.

On Vertex AI Pipelines every task is a container of its own, started from the task's
image: its Python, its packages (``packages_to_install`` included), its HOME and working
directory are the container's, Cloud Storage is mounted at ``/gcs``, and nothing a task
installs outlives it. A local run (:mod:`trainpool.kfp_local.execute`) decides what a task
runs and with which variables; a :class:`Launcher` gives the task that sandbox and runs it.
The emulator provides one (``trainpool.emulator.pipeline_jobs.task_sandboxes``: each task in a
Python of its own over a stand-in of its image, in a mount namespace with the store at ``/gcs``), so
this layer names only the contract.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class TaskStart:
    """One start of a task: ``name`` as Vertex names the task, ``task_id`` its id in the
    run's task details, ``command`` as kfp.local resolved it (its ``python3`` still the
    image's), ``env`` the variables the task gets (the image's, the run's and the
    container's own ``env``: ``set_env_variable``); ``kind`` is ``"python"`` (a lightweight
    component) or ``"launcher"`` (a GCPC launcher); ``notes`` are lines for the task's log
    before it starts (settings a local run does not apply)."""

    name: str
    task_id: int
    image: str
    command: list[str]
    env: dict[str, str]
    kind: str
    notes: tuple[str, ...] = field(default=())


class Launcher(Protocol):
    """What runs a local run's tasks (:class:`TaskStart`)."""

    def begin(
        self, spec: Mapping[str, Any], run_dir: Path, environ: Callable[[str], dict[str, str]]
    ) -> bool:
        """The run of compiled pipeline ``spec`` starts; its files go under ``run_dir``,
        ``environ(image)`` is a task's environment before its own ``env``. True when tasks
        see the local store at ``/gcs`` (artifact URIs are then ``gs://``, paths ``/gcs/``)."""
        ...

    def run(self, task: TaskStart, say: Callable[[str], None]) -> int:
        """Run ``task`` and return its exit status (128 + N: killed by signal N); each line
        of its output goes to ``say`` as it comes."""
        ...

    def terminate(self) -> bool:
        """Called from a signal handler: send SIGTERM to every running task (and SIGKILL to
        what is left after a grace period) and start none after it; whether any ran."""
        ...

    def end(self) -> None:
        """The run has ended: nothing of it may be left running."""
        ...
