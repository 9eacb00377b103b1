"""One run of a compiled pipeline YAML under kfp.local, against the emulator.

What Vertex AI Pipelines does before and around a run, the run does too:

- the run's project and location replace the Google Cloud placeholders
  (``spec.placeholders``), in a resolved copy of the YAML kept with the transcript;
- a local ``source_dir`` parameter is packed and uploaded under the pipeline root
  (``images.sources``), and the tasks get its ``gs://`` URI;
- the pipeline root is a ``gs://`` URI in the local store, so artifacts have the
  Cloud Storage names they would have on Vertex;
- each task gets its image's environment (:mod:`trainpool.kfp_local.task_env`), and the run's
  labels (``VERTEX_AI_PIPELINES_RUN_LABELS``, :data:`RUN_LABEL`), which their jobs carry;
- each task runs in a sandbox of its own that the caller's launcher gives it
  (:class:`trainpool.kfp_local.launching.Launcher`: its image's Python, ``/gcs``), is recorded
  and cached as Vertex records and caches it (:mod:`trainpool.kfp_local.tasks`), and writes
  its outputs where Vertex would.

The YAML is then called under ``kfp.local.init(SubprocessRunner(use_venv=False))``, whose
task handler hands every task to the launcher (:mod:`trainpool.kfp_local.containers`), against
the emulator ``VERTEX_AI_EMULATOR_HOST`` names. Everything kfp.local prints, its warnings
and log records included, goes to the transcript. SIGTERM or SIGINT stops the tasks and
ends the run CANCELLED (:mod:`trainpool.kfp_local.interrupt`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from trainpool import config
from trainpool.cluster_env import gcs
from trainpool.cluster_env.gcs import LOCAL_ROOT_ENV
from trainpool.home import Home
from trainpool.images import sources
from trainpool.kfp_local import containers, interrupt
from trainpool.kfp_local.cache import TaskCache
from trainpool.kfp_local.details import TaskDetails
from trainpool.kfp_local.launching import Launcher
from trainpool.kfp_local.task_env import image_environ, task_environ
from trainpool.kfp_local.tasklog import TaskLog, TaskState
from trainpool.spec import kfp_v1, placeholders
from trainpool.spec.pipeline_params import (
    coerce_values,
    load_pipeline_document,
    load_pipeline_spec,
    pipeline_defaults,
    pipeline_inputs,
)

RUN_LABEL = "trainpool-local-run"
"""The label every job of a local run carries: the run's id."""


@dataclass
class Execution:
    """What a run did: ``state`` is ``SUCCEEDED``, ``FAILED`` or ``CANCELLED``
    (``signal``: the SIGTERM or SIGINT that cancelled it)."""

    pipeline: str
    state: str
    outputs: dict[str, Any]
    seconds: float
    transcript: Path
    run_dir: Path | None
    error: str = ""
    tasks: list[TaskState] = field(default_factory=list)
    signal: int | None = None

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


def _to(log: TaskLog) -> Any:
    def show(message: Any, category: Any, filename: str, lineno: int, *_: Any) -> None:
        log.write(warnings.formatwarning(message, category, filename, lineno))

    return show


@contextlib.contextmanager
def to_transcript(log: TaskLog) -> Iterator[None]:
    """kfp.local's prints, warnings and log records (stdout and stderr) into the transcript;
    its INFO records too (the tasks it skips: a condition that is false, an upstream task
    that failed, which :class:`TaskLog` records)."""
    import logging

    handler = logging.StreamHandler(log)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(min(level, logging.INFO) if level else logging.INFO)
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
        root.removeHandler(handler)
        root.setLevel(level)


def _not_named_like_a_component(resolved: Path) -> None:
    """kfp loads a pipeline named like one of its components as that component alone
    (``ComponentSpec.from_ir_dicts`` looks ``comp-<pipeline name>`` up first); rename the
    local copy's pipeline so the whole pipeline runs, as it does on Vertex."""
    from kfp.dsl.utils import sanitize_component_name

    spec = load_pipeline_spec(resolved)
    name = str(spec["pipelineInfo"]["name"])
    if sanitize_component_name(name) in spec.get("components", {}):
        spec["pipelineInfo"]["name"] = f"{name}-pipeline"
        resolved.write_text(json.dumps(spec), encoding="utf-8")


@contextlib.contextmanager
def _every(seconds: float, action: Callable[[], None]) -> Iterator[None]:
    """Within the block, call ``action`` every ``seconds`` in a thread of its own."""

    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(seconds):
            action()

    thread = threading.Thread(target=loop, name="trainpool-run-details", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


class PipelineExecution:
    """One run of ``pipeline_path`` with ``params`` (typed again against its inputs) as
    ``project``'s run in ``location``, its outputs under ``pipeline_root`` (``gs://`` in the
    local store of ``home``), laid out under ``project_number`` and ``job_id`` as Vertex lays
    them out; ``caching`` uses and fills the store's execution cache as the tasks'
    ``cachingOptions`` say (:mod:`trainpool.kfp_local.cache`). The run's own files (its
    resolved YAML, transcript, tasks' sandboxes and logs) go to ``files`` (default a new
    ``<root>/local-runs/<pipeline>-<time>/``, its transcript beside it).

    Preparing it (the constructor) checks the input, writes the resolved YAML and uploads a
    local ``source_dir``; bad input (a parameter, a ``source_dir`` that is not a folder, a
    pipeline root that is not a ``gs://`` URI) raises ValueError before anything runs.
    """

    def __init__(
        self,
        pipeline_path: str | Path,
        params: Mapping[str, Any],
        home: Home,
        *,
        project: str,
        location: str,
        pipeline_root: str,
        run_id: str = "",
        job_id: str = "",
        project_number: str = "0",
        caching: bool = True,
        files: Path | None = None,
    ) -> None:
        original, config = load_pipeline_document(pipeline_path)
        # a kfp 1.8 pipeline (schemaVersion 2.0.0) runs in the 2.1.0 shape kfp.local reads;
        # the runtime config its compiler wrote holds its defaults (spec.kfp_v1)
        spec = kfp_v1.upgrade(original)
        inputs = pipeline_inputs(spec)
        compiled = coerce_values(kfp_v1.runtime_values(original, config, "runtimeConfig"), inputs)
        self.values = {**compiled, **coerce_values(params, inputs)}
        self.v1 = kfp_v1.is_v1(original)
        containers.check(spec)
        self.pipeline = str(spec["pipelineInfo"]["name"])
        self.project, self.location = project, location
        self.home = home.resolved()
        self.home.root.mkdir(parents=True, exist_ok=True)
        self.pipeline_root = Path(gcs.to_path(pipeline_root, self.home.gcs, "pipeline_root"))
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        self.run_id = run_id or f"{stamp}-{os.getpid()}"
        self.job_id = job_id or self.run_id
        self.project_number = project_number
        self.caching = caching
        self.run_dir = files or self.home.local_runs / f"{self.pipeline}-{stamp}"
        self.run_dir.mkdir(parents=True, exist_ok=files is not None)
        self.transcript = (
            self.run_dir / "transcript.log" if files else self.run_dir.with_suffix(".log")
        )
        self.resolved = self.run_dir / "pipeline.yaml"
        text = (
            json.dumps(spec, sort_keys=True)
            if self.v1
            else Path(pipeline_path).read_text(encoding="utf-8")
        )
        self.resolved.write_text(placeholders.resolve(text, project, location), encoding="utf-8")
        _not_named_like_a_component(self.resolved)
        with patched_environ({LOCAL_ROOT_ENV: str(self.home.gcs)}):
            for param in sources.SOURCE_PARAMETERS:
                if self.values.get(param):
                    self.values[param] = sources.upload_param(
                        param, str(self.values[param]), pipeline_root
                    )
        self.spec = load_pipeline_spec(self.resolved)

    @property
    def settings(self) -> dict[str, Any]:
        """The run's parameters: the pipeline's defaults (resolved), then its values."""
        return {**pipeline_defaults(self.spec), **self.values}

    def execute(
        self,
        launcher: Launcher,
        around: Callable[[TaskLog], AbstractContextManager[Any]] | None = None,
        on_cancel: Callable[[], None] | None = None,
        details: Path | None = None,
    ) -> Execution:
        """Run the tasks, each by ``launcher``; a failed task gives a FAILED execution rather
        than an exception.

        ``around(log)`` is entered while the tasks run (a live display, a job watch);
        ``on_cancel`` is called after a SIGTERM/SIGINT stopped them (to cancel the run's jobs);
        ``details`` is kept up to date with the tasks as Vertex reports them
        (:mod:`trainpool.kfp_local.details`).
        """
        from kfp import components, local

        component = components.load_component_from_file(str(self.resolved))
        started = time.monotonic()
        outputs: dict[str, Any] = {}
        error = ""
        with contextlib.ExitStack() as stack:
            env = {
                config.HOME_ENV: str(self.home.root),
                LOCAL_ROOT_ENV: str(self.home.gcs),
                "VERTEX_AI_PIPELINES_RUN_LABELS": run_labels(self.run_id),
            }
            stack.enter_context(patched_environ(env))
            log = TaskLog(open(self.transcript, "w", encoding="utf-8"))  # noqa: SIM115
            stack.callback(log.close_transcript)
            if around is not None:
                stack.enter_context(around(log))
            tasks = TaskDetails(self.home.gcs, self.spec)
            if details is not None:
                writing = threading.Lock()  # one writer of the details file at a time

                def write_details() -> None:
                    with writing:
                        try:
                            tasks.write(log.snapshot(), details)
                        except OSError as err:  # a full disk: the next write tries again
                            if err.errno not in (errno.ENOSPC, errno.EDQUOT):
                                raise

                log.on_change = write_details  # a task that began is on record at once
                stack.callback(write_details)
                stack.enter_context(_every(1.0, write_details))
            host = dict(os.environ)
            environs: dict[str, dict[str, str]] = {}

            def environ(image: str) -> dict[str, str]:
                if image not in environs:
                    image_env = image_environ(image, self.home.root)
                    environs[image] = task_environ(
                        host, image_env, self.run_dir / "home", self.project
                    )
                return dict(environs[image])

            mounted = launcher.begin(self.spec, self.run_dir, environ)
            stack.callback(launcher.end)
            context = containers.RunContext(
                self.project,
                self.location,
                self.job_id,
                log,
                launcher,
                environ,
                record=tasks.record,
                cached=tasks.cached,
                pipeline=self.pipeline,
                cache=TaskCache(self.home.pipeline_cache) if self.caching else None,
                project_number=self.project_number,
                gcs_root=self.home.gcs,
                mounted=mounted,
            )
            stack.enter_context(containers.running(context))
            signals_seen = stack.enter_context(interrupt.handed_on())
            stack.enter_context(interrupt.terminating(launcher.terminate))
            try:
                with to_transcript(log):
                    local.init(
                        local.SubprocessRunner(use_venv=False),
                        pipeline_root=str(self.pipeline_root),
                    )
                    task = component(**self.values)
                outputs = {key: _plain(value) for key, value in task.outputs.items()}
            except (RuntimeError, interrupt.Interrupted) as err:
                error = TaskLog.plain(str(err))
            if signals_seen:
                error = f"cancelled by {signal.Signals(signals_seen[0]).name}"
                if on_cancel is not None:
                    on_cancel()
            for state in log.snapshot():
                if state.state == "RUNNING":
                    log.end(state.task_id, "CANCELLED" if signals_seen else "FAILED")
            log.flush()
            if log.lost:  # never SUCCEEDED with the transcript cut: the disk is named
                error = f"{error}\n{log.lost}" if error else log.lost
        return Execution(
            pipeline=self.pipeline,
            state=("CANCELLED" if signals_seen else "FAILED") if error else "SUCCEEDED",
            outputs=outputs,
            seconds=time.monotonic() - started,
            transcript=self.transcript,
            run_dir=self.pipeline_root / self.project_number / self.job_id,
            error=error,
            tasks=log.snapshot(),
            signal=signals_seen[0] if signals_seen else None,
        )
