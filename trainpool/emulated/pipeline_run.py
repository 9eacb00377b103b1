"""``trainpool run PIPELINE.yaml --local``: a pipeline run on this machine, with its emulator,
a live display and a summary of its jobs.

The run itself is :class:`trainpool.kfp_local.execute.PipelineExecution` (kfp.local,
placeholders, uploaded
sources, the tasks' environment), each task a container of its image where a container
engine answers, else in a sandbox of its own, as the emulator's PipelineJobs run theirs
(:func:`trainpool.emulator.pipeline_jobs.task_containers.launcher`). Around
it: the emulator
(:func:`trainpool.emulated.emulators.emulator_for`: the one ``VERTEX_AI_EMULATOR_HOST``
names, whose store the run then uses, else the one serving the root, else one started in
this process with its Cloud Storage door); while it runs, the run's jobs, trials and
replica logs are polled (:mod:`trainpool.emulated.jobwatch`) for the live display; SIGTERM
or SIGINT stops the tasks, cancels the run's jobs, and ends the run CANCELLED. Only the
progress display reaches the screen; kfp.local's output goes to the transcript.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live

from trainpool.emulated.defaults import DEFAULT_LOCATION, DEFAULT_PIPELINE_ROOT, DEFAULT_PROJECT
from trainpool.emulated.emulators import emulator_for, store_for
from trainpool.emulated.jobwatch import JobView, JobWatch
from trainpool.emulated.progress import Frame
from trainpool.emulator.api.resource_manager import PROJECT_NUMBER
from trainpool.emulator.pipeline_jobs.task_containers import launcher
from trainpool.home import Home
from trainpool.kfp_local.execute import Execution, PipelineExecution
from trainpool.kfp_local.tasklog import TaskLog


@dataclass
class RunResult(Execution):
    """What a local run did (:class:`trainpool.kfp_local.execute.Execution`), with its jobs."""

    jobs: list[JobView] = field(default_factory=list)
    root: Path | None = None


def _watch(home: Home, run: PipelineExecution) -> JobWatch:
    """The run's jobs: in the project and location its parameters name, else the run's own
    (what GCPC's placeholders resolve to)."""
    project = run.settings.get("project")
    location = run.settings.get("location")
    return JobWatch(
        home,
        project if isinstance(project, str) and project else run.project,
        location if isinstance(location, str) and location else run.location,
        run.run_id,
    )


def run_local(
    pipeline_path: str | Path,
    params: Mapping[str, Any],
    root: str | Path | None = None,
    *,
    console: Console | None = None,
    project: str = DEFAULT_PROJECT,
    location: str = DEFAULT_LOCATION,
    pipeline_root: str = DEFAULT_PIPELINE_ROOT,
) -> RunResult:
    """Run the pipeline with ``params`` (typed again against its inputs) as ``project``'s run
    in ``location``, its outputs under ``pipeline_root`` (``gs://`` in the local store).

    Bad input (a parameter, a ``source_dir`` that is not a folder, a pipeline root that is
    not a ``gs://`` URI) raises ValueError before anything runs. A failed task gives a
    FAILED result rather than an exception. ``console`` shows the live progress display;
    ``None`` runs quietly.
    """
    chosen = Path(root) if root is not None else None
    home = store_for(chosen)
    run = PipelineExecution(
        pipeline_path,
        params,
        home,
        project=project,
        location=location,
        pipeline_root=pipeline_root,
        project_number=PROJECT_NUMBER,
    )
    watch = _watch(home, run)
    if console is not None:
        console.file = console.file  # the screen it has now, not the transcript put in its place

    @contextlib.contextmanager
    def around(log: TaskLog) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            if console is not None:
                frame = Frame(run.pipeline, log.snapshot, watch.snapshot)
                live = Live(frame, console=console, redirect_stdout=False, redirect_stderr=False)
                stack.enter_context(live)
            stack.enter_context(watch)
            yield

    with emulator_for(chosen):
        done = run.execute(launcher(home), around, on_cancel=watch.cancel_unfinished)
    if console is not None and not console.is_terminal:
        console.line()
    return RunResult(**done.__dict__, jobs=watch.snapshot(), root=home.root)
