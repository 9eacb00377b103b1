"""Run a compiled pipeline YAML under kfp.local against the trainpool emulator.

The YAML is loaded from disk with ``kfp.components.load_component_from_file``
and called under ``kfp.local.init(SubprocessRunner(use_venv=False))``, so each
lightweight component runs as a subprocess of this interpreter. The emulator
is started in this process unless ``VERTEX_AI_EMULATOR_HOST`` already names
one; the tasks inherit ``VERTEX_AI_EMULATOR_HOST`` and ``TRAINPOOL_HOME``.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live

from trainpool import config
from trainpool.localrun.jobwatch import JobView, JobWatch
from trainpool.localrun.params import (
    coerce_values,
    load_pipeline_spec,
    pipeline_defaults,
    pipeline_inputs,
)
from trainpool.localrun.progress import Frame
from trainpool.localrun.tasklog import TaskLog, TaskState

PIPELINE_ROOT = "pipeline-root"
TRANSCRIPTS = "localrun"
DEFAULT_LOCATION = "us-central1"


@dataclass
class RunResult:
    """What a local run did: ``state`` is ``SUCCEEDED`` or ``FAILED``."""

    pipeline: str
    state: str
    outputs: dict[str, Any]
    seconds: float
    transcript: Path
    run_dir: Path | None
    error: str = ""
    tasks: list[TaskState] = field(default_factory=list)
    jobs: list[JobView] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.state == "SUCCEEDED"


@contextlib.contextmanager
def patched_environ(updates: Mapping[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in updates}
    os.environ.update(updates)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def emulator_for(root: Path) -> Iterator[str]:
    """The emulator's address: the one already set, else one started on ``root`` for the run."""
    host = config.emulator_host()
    if host is not None:
        yield host
        return
    from trainpool import emulator

    with emulator.start(root) as running, patched_environ({config.EMULATOR_ENV: running.address}):
        yield running.address


def _plain(value: Any) -> Any:
    """Outputs as JSON-ready values: artifacts become ``{uri, metadata}``."""
    from kfp import dsl

    if isinstance(value, dsl.Artifact):
        return {"artifact": value.schema_title, "uri": value.uri, "metadata": dict(value.metadata)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _watch(root: Path, values: Mapping[str, Any], since: datetime) -> JobWatch | None:
    project = values.get("project")
    if not isinstance(project, str) or not project:
        return None
    location = values.get("location") or DEFAULT_LOCATION
    return JobWatch(root, project, str(location), since)


def run_local(
    pipeline_path: str | Path,
    params: Mapping[str, Any],
    root: str | Path,
    *,
    console: Console | None = None,
) -> RunResult:
    """Run the pipeline with ``params`` (typed again against its inputs).

    A failed task gives a FAILED result rather than an exception.

    ``console`` shows the live progress display; ``None`` runs quietly.
    """
    from kfp import components, local

    spec = load_pipeline_spec(pipeline_path)
    values = coerce_values(params, pipeline_inputs(spec))
    name = str(spec["pipelineInfo"]["name"])
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    transcript = root / TRANSCRIPTS / f"{name}-{stamp}.log"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    component = components.load_component_from_file(str(pipeline_path))
    started = time.monotonic()
    since = datetime.now(timezone.utc)
    watch = _watch(root, {**pipeline_defaults(spec), **values}, since)
    outputs: dict[str, Any] = {}
    error = ""
    with contextlib.ExitStack() as stack:
        stack.enter_context(emulator_for(root))
        stack.enter_context(patched_environ({config.HOME_ENV: str(root)}))
        log = TaskLog(stack.enter_context(open(transcript, "w", encoding="utf-8")))
        if console is not None:
            frame = Frame(name, log.snapshot, watch.snapshot if watch else list)
            live = Live(frame, console=console, redirect_stdout=False, redirect_stderr=False)
            stack.enter_context(live)
        if watch is not None:
            stack.enter_context(watch)
        local.init(local.SubprocessRunner(use_venv=False), pipeline_root=str(root / PIPELINE_ROOT))
        try:
            with contextlib.redirect_stdout(log):
                task = component(**values)
            outputs = {key: _plain(value) for key, value in task.outputs.items()}
        except RuntimeError as err:
            error = TaskLog.plain(str(err))
    if console is not None and not console.is_terminal:
        console.line()
    return RunResult(
        pipeline=name,
        state="FAILED" if error else "SUCCEEDED",
        outputs=outputs,
        seconds=time.monotonic() - started,
        transcript=transcript,
        run_dir=log.run_dir,
        error=error,
        tasks=log.snapshot(),
        jobs=watch.snapshot() if watch else [],
    )
