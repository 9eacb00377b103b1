"""Run a compiled pipeline YAML under kfp.local against the trainpool emulator.

What Vertex AI Pipelines does before and around a run, the local run does too:

- the run's project and location replace the Google Cloud placeholders
  (``spec.placeholders``), in a resolved copy of the YAML kept with the transcript;
- a local ``source_dir`` parameter is packed and uploaded under the pipeline root
  (``images.sources``), and the tasks get its ``gs://`` URI;
- the pipeline root is a ``gs://`` URI in the local store, so artifacts have the
  Cloud Storage names they would have on Vertex;
- each task runs outside the checkout, with the components image's environment
  (``localrun.task_env``).

The YAML is then called under ``kfp.local.init(SubprocessRunner(use_venv=False))``:
each lightweight component runs as a subprocess of this interpreter. The emulator is
the one ``VERTEX_AI_EMULATOR_HOST`` names, else the one already serving the root (its
lock file says where), else one started in this process; the tasks get the run's label
(``VERTEX_AI_PIPELINES_RUN_LABELS``), which their jobs carry.

Everything kfp.local prints, its warnings and log records included, goes to the
transcript; the screen shows only the progress display. SIGTERM or SIGINT stops
the tasks, cancels the run's jobs, and ends the run CANCELLED.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live

from trainpool import config
from trainpool.cluster_env import gcs
from trainpool.cluster_env.gcs import LOCAL_ROOT_ENV
from trainpool.images import sources
from trainpool.localrun import interrupt
from trainpool.localrun.defaults import DEFAULT_LOCATION, DEFAULT_PIPELINE_ROOT, DEFAULT_PROJECT
from trainpool.localrun.jobwatch import RUN_LABEL, JobView, JobWatch
from trainpool.localrun.params import (
    coerce_values,
    load_pipeline_spec,
    pipeline_defaults,
    pipeline_inputs,
)
from trainpool.localrun.progress import Frame
from trainpool.localrun.task_env import image_environ, task_environ
from trainpool.localrun.tasklog import TaskLog, TaskState
from trainpool.spec import placeholders

TRANSCRIPTS = "localrun"
SOURCE_PARAMETERS = ("source_dir",)


@dataclass
class RunResult:
    """What a local run did: ``state`` is ``SUCCEEDED``, ``FAILED`` or ``CANCELLED``
    (``signal``: the SIGTERM or SIGINT that cancelled it)."""

    pipeline: str
    state: str
    outputs: dict[str, Any]
    seconds: float
    transcript: Path
    run_dir: Path | None
    error: str = ""
    tasks: list[TaskState] = field(default_factory=list)
    jobs: list[JobView] = field(default_factory=list)
    signal: int | None = None
    root: Path | None = None

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


def run_labels(run_id: str) -> str:
    """``VERTEX_AI_PIPELINES_RUN_LABELS`` for the tasks: any set already, plus the run's."""
    raw = os.environ.get("VERTEX_AI_PIPELINES_RUN_LABELS", "").strip()
    try:
        labels = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        labels = {}
    return json.dumps({**(labels if isinstance(labels, dict) else {}), RUN_LABEL: run_id})


def _plain(value: Any) -> Any:
    """Outputs as JSON-ready values: artifacts become ``{uri, metadata}``."""
    from kfp import dsl

    if isinstance(value, dsl.Artifact):
        return {"artifact": value.schema_title, "uri": value.uri, "metadata": dict(value.metadata)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _watch(root: Path, values: Mapping[str, Any], run_id: str) -> JobWatch | None:
    project = values.get("project")
    if not isinstance(project, str) or not project:
        return None
    location = values.get("location") or DEFAULT_LOCATION
    return JobWatch(root, project, str(location), run_id)


def _to(log: TaskLog) -> Any:
    def show(message: Any, category: Any, filename: str, lineno: int, *_: Any) -> None:
        log.write(warnings.formatwarning(message, category, filename, lineno))

    return show


@contextlib.contextmanager
def to_transcript(log: TaskLog) -> Iterator[None]:
    """kfp.local's prints, warnings and log records (stdout and stderr) into the transcript."""
    import logging

    handler = logging.StreamHandler(log)
    logging.getLogger().addHandler(handler)
    try:
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(log),
            contextlib.redirect_stderr(log),
        ):
            warnings.simplefilter("always")
            warnings.showwarning = _to(log)
            yield
    finally:
        logging.getLogger().removeHandler(handler)


@contextlib.contextmanager
def task_surroundings(workdir: Path, environ: Mapping[str, str]) -> Iterator[None]:
    """Within the block, new subprocesses (kfp.local's tasks) start in ``workdir``, with
    ``environ``."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(environ)
    os.chdir(workdir)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def _executor_image(spec: Mapping[str, Any]) -> str:
    executors = spec.get("deploymentSpec", {}).get("executors", {})
    images = {e.get("container", {}).get("image", "") for e in executors.values()}
    return images.pop() if len(images) == 1 else ""


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
    from kfp import components, local

    spec = load_pipeline_spec(pipeline_path)
    values = coerce_values(params, pipeline_inputs(spec))
    name = str(spec["pipelineInfo"]["name"])
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    gcs_root = root / "gcs"
    local_root_path = Path(gcs.to_path(pipeline_root, gcs_root, "pipeline_root"))
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    run_dir = root / TRANSCRIPTS / f"{name}-{stamp}"
    (run_dir / "work").mkdir(parents=True)
    transcript = run_dir.with_suffix(".log")
    resolved = run_dir / "pipeline.yaml"
    resolved.write_text(
        placeholders.resolve(Path(pipeline_path).read_text(encoding="utf-8"), project, location),
        encoding="utf-8",
    )
    with patched_environ({LOCAL_ROOT_ENV: str(gcs_root)}):
        for param in SOURCE_PARAMETERS:
            if values.get(param):
                values[param] = sources.upload_param(param, str(values[param]), pipeline_root)
    component = components.load_component_from_file(str(resolved))
    started = time.monotonic()
    run_id = f"{stamp}-{os.getpid()}"
    defaults = load_pipeline_spec(resolved)
    watch = _watch(root, {**pipeline_defaults(defaults), **values}, run_id)
    outputs: dict[str, Any] = {}
    error = ""
    if console is not None:
        console.file = console.file  # the screen it has now, not the transcript put in its place
    with contextlib.ExitStack() as stack:
        stack.enter_context(emulator_for(root))
        env = {
            config.HOME_ENV: str(root),
            LOCAL_ROOT_ENV: str(gcs_root),
            "VERTEX_AI_PIPELINES_RUN_LABELS": run_labels(run_id),
        }
        stack.enter_context(patched_environ(env))
        log = TaskLog(stack.enter_context(open(transcript, "w", encoding="utf-8")))
        if console is not None:
            frame = Frame(name, log.snapshot, watch.snapshot if watch else list)
            live = Live(frame, console=console, redirect_stdout=False, redirect_stderr=False)
            stack.enter_context(live)
        if watch is not None:
            stack.enter_context(watch)
        image_env = image_environ(_executor_image(defaults), root)
        environ = task_environ(os.environ, image_env, run_dir / "home")
        signals_seen = stack.enter_context(interrupt.handed_on())
        try:
            with to_transcript(log), task_surroundings(run_dir / "work", environ):
                local.init(
                    local.SubprocessRunner(use_venv=False), pipeline_root=str(local_root_path)
                )
                task = component(**values)
            outputs = {key: _plain(value) for key, value in task.outputs.items()}
        except (RuntimeError, interrupt.Interrupted) as err:
            error = TaskLog.plain(str(err))
        if signals_seen:
            error = f"cancelled by {signal.Signals(signals_seen[0]).name}"
            if watch is not None:
                watch.cancel_unfinished()
    if console is not None and not console.is_terminal:
        console.line()
    return RunResult(
        pipeline=name,
        state=("CANCELLED" if signals_seen else "FAILED") if error else "SUCCEEDED",
        outputs=outputs,
        seconds=time.monotonic() - started,
        transcript=transcript,
        run_dir=log.run_dir,
        error=error,
        tasks=log.snapshot(),
        jobs=watch.snapshot() if watch else [],
        signal=signals_seen[0] if signals_seen else None,
        root=root,
    )
