"""``trainpool run PIPELINE.yaml --local``: a pipeline run on this machine, with its emulator,
a live display and a summary of its jobs.

The run itself is :class:`trainpool.kfprun.execute.Run` (kfp.local, placeholders, uploaded
sources, the tasks' environment). Around it: the emulator is the one
``VERTEX_AI_EMULATOR_HOST`` names, else the one already serving the root (its lock file
says where), else one started in this process; while it runs, the run's jobs, trials and
replica logs are polled (:mod:`trainpool.localrun.jobwatch`) for the live display; SIGTERM
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

from trainpool import config
from trainpool.home import Home
from trainpool.kfprun.execute import Execution, Run, patched_environ
from trainpool.kfprun.tasklog import TaskLog
from trainpool.localrun.defaults import DEFAULT_LOCATION, DEFAULT_PIPELINE_ROOT, DEFAULT_PROJECT
from trainpool.localrun.jobwatch import JobView, JobWatch
from trainpool.localrun.progress import Frame


@dataclass
class RunResult(Execution):
    """What a local run did (:class:`trainpool.kfprun.execute.Execution`), with its jobs."""

    jobs: list[JobView] = field(default_factory=list)
    root: Path | None = None


@contextlib.contextmanager
def emulator_for(root: Path) -> Iterator[str]:
    """The emulator's address: the one already set, else the one serving ``root``, else one
    started on ``root`` for the run."""
    host = config.emulator_host()
    if host is not None:
        yield host
        return
    from trainpool import emulator
    from trainpool.emulator import root_lock

    serving = root_lock.running(root)
    if serving is not None:
        with patched_environ({config.EMULATOR_ENV: serving}):
            yield serving
        return
    with emulator.start(root) as running, patched_environ({config.EMULATOR_ENV: running.address}):
        yield running.address


def _watch(root: Path, settings: Mapping[str, Any], run_id: str) -> JobWatch | None:
    project = settings.get("project")
    if not isinstance(project, str) or not project:
        return None
    location = settings.get("location") or DEFAULT_LOCATION
    return JobWatch(Home(root), project, str(location), run_id)


def run_local(
    pipeline_path: str | Path,
    params: Mapping[str, Any],
    root: str | Path,
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
    home = Home(Path(root)).resolved()
    run = Run(
        pipeline_path,
        params,
        home,
        project=project,
        location=location,
        pipeline_root=pipeline_root,
    )
    watch = _watch(home.root, run.settings, run.run_id)
    if console is not None:
        console.file = console.file  # the screen it has now, not the transcript put in its place

    @contextlib.contextmanager
    def around(log: TaskLog) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            if console is not None:
                frame = Frame(run.pipeline, log.snapshot, watch.snapshot if watch else list)
                live = Live(frame, console=console, redirect_stdout=False, redirect_stderr=False)
                stack.enter_context(live)
            if watch is not None:
                stack.enter_context(watch)
            yield

    with emulator_for(home.root):
        done = run.execute(around, on_cancel=watch.cancel_unfinished if watch else None)
    if console is not None and not console.is_terminal:
        console.line()
    return RunResult(**done.__dict__, jobs=watch.snapshot() if watch else [], root=home.root)
