"""The progress display of a local run: tasks, jobs, replicas and trials, with rich."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from trainpool.emulated.jobwatch import JobView
from trainpool.kfp_local.tasklog import TaskState

_STYLES = {
    "SUCCEEDED": "green",
    "FAILED": "red",
    "CANCELLED": "yellow",
    "SKIPPED": "dim",
    "RUNNING": "cyan",
    "PENDING": "blue",
    "QUEUED": "blue",
    "ACTIVE": "cyan",
}
MAX_REPLICAS = 8


def _state(state: str) -> Text:
    return Text(state, style=_STYLES.get(state, ""))


def task_table(tasks: list[TaskState]) -> Table:
    table = Table(title="Tasks", title_justify="left", expand=False)
    for column in ("task", "state", "seconds", "last output"):
        table.add_column(column)
    for task in tasks:
        last = task.tail[-1] if task.tail and task.state == "RUNNING" else ""
        table.add_row(task.name, _state(task.state), f"{task.seconds:.1f}", last[:80])
    return table


def job_table(jobs: list[JobView]) -> Table:
    table = Table(title="Jobs on the emulator", title_justify="left")
    for column in ("job", "display name", "kind", "state", "replicas"):
        table.add_column(column)
    for job in jobs:
        replicas = "\n".join(
            f"{name}: {line[:70]}" for name, line in list(job.replicas.items())[:MAX_REPLICAS]
        )
        table.add_row(job.job_id, job.display_name, job.kind, _state(job.state), replicas)
    return table


def trial_table(jobs: list[JobView]) -> Table:
    table = Table(title="Trials", title_justify="left")
    for column in ("job", "trial", "state", "parameters", "metric"):
        table.add_column(column)
    for job in jobs:
        for trial in job.trials:
            params = ", ".join(
                f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                for k, v in trial.parameters.items()
            )
            metric = "" if trial.metric is None else f"{trial.metric:.6g}"
            table.add_row(job.job_id, trial.trial_id, _state(trial.state), params, metric)
    return table


def render(
    pipeline: str, started: float, tasks: list[TaskState], jobs: list[JobView]
) -> RenderableType:
    """One frame: the pipeline line, then the task, job and trial tables that have rows."""
    parts: list[RenderableType] = [
        Text(f"pipeline {pipeline} · {time.monotonic() - started:.0f}s", style="bold")
    ]
    parts.append(task_table(tasks))
    if jobs:
        parts.append(job_table(jobs))
    if any(job.trials for job in jobs):
        parts.append(trial_table(jobs))
    return Group(*parts)


class Frame:
    """A renderable that draws the latest state each time rich refreshes."""

    def __init__(
        self,
        pipeline: str,
        tasks: Callable[[], list[TaskState]],
        jobs: Callable[[], list[JobView]],
    ) -> None:
        self.pipeline = pipeline
        self.started = time.monotonic()
        self._tasks = tasks
        self._jobs = jobs

    def __rich__(self) -> RenderableType:
        return render(self.pipeline, self.started, self._tasks(), self._jobs())
