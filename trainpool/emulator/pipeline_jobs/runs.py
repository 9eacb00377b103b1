"""PipelineJobs run locally: each in a process of its own, by ``trainpool.kfp_local``.

A created job's pipeline spec is written to ``<root>/pipelines/<id>/pipeline.json`` and run
in the background by :mod:`trainpool.kfp_local` (kfp.local against this emulator) in
:mod:`.run_process`, its tasks each in a sandbox of its own (:mod:`.tasks`), in its own
process group, with its output in ``<root>/pipelines/<id>/run.log`` and its own files
(the transcript, each task's sandbox and ``tasks/<task>_<id>/task.log``) in
``<root>/pipelines/<id>/run/``. The job's state
follows that process: RUNNING, then SUCCEEDED or FAILED by its exit status; Cancel sends
the process SIGTERM (its running tasks get it, none starts after it) and SIGKILL after
:data:`CANCEL_GRACE_S`, and ends the job CANCELLED, its unfinished tasks with it. A job a
previous server left unfinished has no process any more: it ends FAILED when the next
server starts.

The run's jobs carry the label ``trainpool-local-run`` = :func:`run_id` of the job; its
tasks cancel their own jobs when the run is cancelled (as the launchers do on Vertex),
and what is left with that label is cancelled here.

One :class:`PipelineJobRunner` per server (:func:`start_runs`, called by the server's
wiring): the PipelineService and the schedule firer share it; ``on_finish`` hooks hear
every end. The run's lineage in ML Metadata is recorded from the outside, through
``on_start`` and ``on_end`` (:mod:`trainpool.emulator.metadata.pipeline_lineage`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.cloud.aiplatform_v1.types import pipeline_job as pj
from google.cloud.aiplatform_v1.types.pipeline_state import PipelineState
from google.rpc import code_pb2

import trainpool
from trainpool.config import EMULATOR_ENV, HOME_ENV
from trainpool.emulator.jobs import processes, spawner
from trainpool.emulator.jobs.manager import TERMINAL as JOB_TERMINAL
from trainpool.emulator.jobs.manager import JobManager
from trainpool.emulator.metadata.metadata_records import MetadataRecords
from trainpool.emulator.metadata.pipeline_lineage import PipelineLineage
from trainpool.emulator.pipeline_jobs import run_process
from trainpool.emulator.records import migrate
from trainpool.emulator.records.kinds import CUSTOM_JOBS, PIPELINE_JOBS, TUNING_JOBS
from trainpool.emulator.state import EmulatorState
from trainpool.kfp_local.execute import RUN_LABEL
from trainpool.spec.states import FINAL_PIPELINE_STATES

SOURCE = str(Path(trainpool.__file__).resolve().parent.parent)
"""Where the ``trainpool`` this emulator runs from lies."""
TERMINAL = frozenset(getattr(PipelineState, name) for name in FINAL_PIPELINE_STATES)
DETAILS = "details.json"
"""Where a run keeps its tasks' details (:mod:`trainpool.kfp_local.details`)."""
_FAILED = re.compile(r"^pipeline \S+ FAILED: ")
ENDED = "the emulator ended while the pipeline ran"
LOG = logging.getLogger("trainpool.emulator.rpc")
CANCEL_GRACE_S = 15.0
"""How long a cancelled run has to stop its tasks (a GCPC launcher cancels its job, the run
then records its tasks' ends) before it is killed."""
UNFINISHED = ("PENDING", "RUNNING", "CANCEL_PENDING", "CANCELLING")


def run_id(job_name: str) -> str:
    """The run id (label value) of a PipelineJob's run: its id, or its start and a digest
    when that is longer than a label value may be (63 characters)."""
    job_id = job_name.rsplit("/", 1)[-1]
    if len(job_id) <= 63:
        return job_id
    return f"{job_id[:42]}-{hashlib.sha256(job_name.encode()).hexdigest()[:20]}"


def param_args(values: dict[str, Any]) -> list[str]:
    """``--param NAME=VALUE`` arguments: strings verbatim, everything else as JSON."""
    args: list[str] = []
    for name, value in sorted(values.items()):
        text = value if isinstance(value, str) else json.dumps(value)
        args += ["--param", f"{name}={text}"]
    return args


def failure_summary(log: Path) -> str:
    """The ``pipeline X FAILED: ...`` line of a run's log (else its last line), and the log."""
    lines = [line for line in processes.tail(log, 40).splitlines() if line.strip()]
    found = [line for line in lines if _FAILED.match(line)]
    summary = found[-1] if found else (lines[-1] if lines else "no output")
    return f"{summary.strip()} (log: {log})"


class PipelineJobRunner:
    """The local runs of one emulator's PipelineJobs."""

    def __init__(self, state: EmulatorState, manager: JobManager) -> None:
        self.state = state
        self.manager = manager
        self.records = state.records
        self._lock = threading.RLock()
        self._runs: dict[str, processes.Replica] = {}
        self._closed = False
        self._finish_hooks: list[Callable[[str], None]] = []
        self._start_hooks: list[Callable[[Any, dict[str, Any], dict[str, Any]], None]] = []
        self._end_hooks: list[Callable[[Any], None]] = []
        self._read_hooks: list[Callable[[Any], None]] = []

    def on_finish(self, hook: Callable[[str], None]) -> None:
        """Call ``hook(job name)`` after every run's end is recorded."""
        self._finish_hooks.append(hook)

    def on_start(self, hook: Callable[[Any, dict[str, Any], dict[str, Any]], None]) -> None:
        """Call ``hook(job, spec, values)`` once a run is RUNNING (the stored job)."""
        self._start_hooks.append(hook)

    def on_end(self, hook: Callable[[Any], None]) -> None:
        """Call ``hook(job)`` when a run's tasks have ended, with the job as it is about to
        be stored (final state, task details filled), before anyone can read that state:
        what the hook changes in ``job.job_detail`` is stored with it."""
        self._end_hooks.append(hook)

    def on_read(self, hook: Callable[[Any], None]) -> None:
        """Call ``hook(job)`` on a job about to be answered (Get, List): the lineage's
        contexts as they are now."""
        self._read_hooks.append(hook)

    def read(self, job: Any) -> Any:
        """``job`` as a client reads it (:meth:`on_read`'s hooks applied)."""
        for hook in self._read_hooks:
            hook(job)
        return job

    def _call(self, hooks: list[Any], name: str, *args: Any) -> None:
        for hook in hooks:
            try:
                hook(*args)
            except Exception:  # a hook's fault must not stop the run's record
                LOG.exception("a hook of PipelineJob %s failed", name)
                log = self.state.home.pipeline_run(name.rsplit("/", 1)[-1]) / "run.log"
                with open(log, "a", encoding="utf-8") as handle:
                    handle.write(
                        "emulator: recording this run's lineage in ML Metadata failed; the "
                        "emulator's log (emulator.log in its root) says why\n"
                    )

    def _set(self, name: str, **fields: Any) -> Any:
        def change(job: Any) -> None:
            for key, value in fields.items():
                setattr(job, key, value)

        return self.records.update(PIPELINE_JOBS, name, change)

    def start(self, job: Any, spec: dict[str, Any], values: dict[str, Any]) -> None:
        """Run stored PipelineJob ``job`` (``spec`` with ``values``) in a process of its own."""
        folder = self.state.home.pipeline_run(job.name.rsplit("/", 1)[-1])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "pipeline.json").write_text(json.dumps(spec, sort_keys=True), encoding="utf-8")
        _, project, _, location, *_ = job.name.split("/")
        argv = [sys.executable, "-m", run_process.__name__, str(folder / "pipeline.json")]
        argv += ["--root", str(self.state.root)]
        argv += ["--project", project, "--location", location]  # the run's own, as on Vertex
        argv += ["--pipeline-root", job.runtime_config.gcs_output_directory]
        argv += ["--run-id", run_id(job.name), "--job-id", job.name.rsplit("/", 1)[-1]]
        argv += ["--details", str(folder / DETAILS), "--files", str(folder / "run")]
        argv += param_args(values)
        env = dict(os.environ, **{EMULATOR_ENV: self.state.address, HOME_ENV: str(self.state.root)})
        # this emulator's Cloud Storage door: the tasks reach the store (and its Cloud Build)
        # through it, as Vertex's tasks reach Google's
        env.update(self.state.storage_env())
        # the run is this emulator's own code: the trainpool it runs from, whatever the
        # emulator's PYTHONPATH (its tasks get none of it, kfp_local.task_env)
        env["PYTHONPATH"] = os.pathsep.join(
            dict.fromkeys([SOURCE, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))])
        )
        launch = processes.Launch("pipeline", 0, argv, env, self.state.root, folder / "run.log")
        with self._lock:
            try:
                run = spawner.start(launch)
            except OSError as err:
                self.finish(job.name, 127, f"could not start the local run: {err}")
                return
            self._runs[job.name] = run
            started = self.state.clock.now()
            running = self._set(
                job.name, state=PipelineState.PIPELINE_STATE_RUNNING, start_time=started
            )
            self._call(self._start_hooks, job.name, running, spec, values)
        name = job.name

        def ended(run: processes.Replica) -> None:
            self.manager.engine.pool.submit(self._ended, name, run)

        run.on_exit(ended)

    def _ended(self, name: str, run: processes.Replica) -> None:
        code = run.exit_status()
        assert code is not None
        with self._lock:
            if not self._closed:
                self.finish(name, code, failure_summary(run.launch.log))

    def finish(self, name: str, code: int, log_tail: str) -> None:
        with self._lock:
            self._runs.pop(name, None)
            ended = self.records.require(PIPELINE_JOBS, name)
            if ended.state not in TERMINAL:
                self._end(ended, code, log_tail, self.state.clock.now())
                self._call(self._end_hooks, name, ended)

            def change(job: Any) -> None:
                if job.state in TERMINAL:
                    return
                self._end(job, code, log_tail, ended.end_time)
                job.job_detail = ended.job_detail

            self.records.update(PIPELINE_JOBS, name, change)
        for hook in list(self._finish_hooks):
            hook(name)

    def _end(self, job: Any, code: int, log_tail: str, when: Any) -> None:
        """``job`` in its final state (``code``: the run's exit status), details filled."""
        if job.state == PipelineState.PIPELINE_STATE_CANCELLING:
            job.state = PipelineState.PIPELINE_STATE_CANCELLED
            job.error.code = code_pb2.CANCELLED
            job.error.message = "cancelled"
        elif code == 0:
            job.state = PipelineState.PIPELINE_STATE_SUCCEEDED
        else:
            job.state = PipelineState.PIPELINE_STATE_FAILED
            job.error.code = code_pb2.INTERNAL
            job.error.message = f"the local run exited with status {code}: {log_tail}"
        job.end_time = when
        self.fill_details(job)

    def fill_details(self, job: Any) -> Any:
        """``job`` with ``job_detail.task_details`` as Vertex fills them: the PipelineJob's root
        task (named after the job's id, as the SDK expects) and each task of the run so far
        (:mod:`trainpool.kfp_local.details`)."""
        job_id = job.name.rsplit("/", 1)[-1]
        path = self.state.home.pipeline_run(job_id) / DETAILS
        try:
            tasks = json.loads(path.read_text(encoding="utf-8")).get("taskDetails", [])
        except (OSError, ValueError):
            tasks = []
        state = PipelineState(job.state).name.removeprefix("PIPELINE_STATE_")
        task_state = {"QUEUED": "PENDING", "PENDING": "PENDING"}.get(state, state)
        root: dict[str, Any] = {
            "taskId": "1",
            "taskName": job_id,
            "taskUniqueName": job_id,
            "state": task_state,
            "execution": {"displayName": job_id, "schemaTitle": "system.DagExecution"},
        }
        for key, value in (
            ("createTime", job.create_time),
            ("startTime", job.start_time),
            ("endTime", job.end_time),
        ):
            if value:
                root[key] = value.isoformat().replace("+00:00", "Z")
        for task in tasks:
            task["parentTaskId"] = "1"
            if task_state in ("CANCELLED", "FAILED") and task.get("state") in UNFINISHED:
                task["state"] = "CANCELLED" if task_state == "CANCELLED" else "FAILED"
        detail = pj.PipelineJobDetail.from_json(json.dumps({"taskDetails": [root, *tasks]}))
        if "pipeline_context" in job.job_detail:  # the run's lineage contexts (on_start)
            detail.pipeline_context = job.job_detail.pipeline_context
            detail.pipeline_run_context = job.job_detail.pipeline_run_context
        job.job_detail = detail
        return job

    def cancel(self, name: str) -> bool:
        """Mark the job CANCELLING and stop its run; False when it has already ended."""
        with self._lock:
            job = self.records.require(PIPELINE_JOBS, name)
            if job.state in TERMINAL:
                return False
            self._set(name, state=PipelineState.PIPELINE_STATE_CANCELLING)
            run = self._runs.get(name)
        if run is None:
            self.finish(name, 1, "")
        else:
            processes.signal_group(run.pgid, signal.SIGTERM)
            self.manager.engine.terminations.submit(processes.terminate, [run], CANCEL_GRACE_S)
        self.cancel_jobs(name)
        return True

    def delete(self, name: str) -> None:
        """Forget ended PipelineJob ``name``: its record and its run's files (its artifacts
        stay in the store, as Vertex leaves them in Cloud Storage)."""
        with self._lock:
            self.records.delete(PIPELINE_JOBS, name)
        shutil.rmtree(self.state.home.pipeline_run(name.rsplit("/", 1)[-1]), ignore_errors=True)

    def cancel_jobs(self, name: str) -> None:
        """Cancel the unfinished jobs of PipelineJob ``name``'s run."""
        parent = name.split(f"/{PIPELINE_JOBS.collection}/")[0]
        label = f'labels.{RUN_LABEL}="{run_id(name)}"'
        for kind in (CUSTOM_JOBS, TUNING_JOBS):
            token = ""
            while True:
                found, token = self.records.page(kind, parent, filter=label, page_token=token)
                for job in found:
                    if job.state not in JOB_TERMINAL:
                        self.manager.cancel(job.name)
                if not token:
                    break

    def terminate_all(self) -> None:
        """On emulator stop: end every local run; their jobs end FAILED."""
        with self._lock:
            self._closed = True
            runs = dict(self._runs)
        processes.terminate(list(runs.values()))
        for name in runs:
            self.finish(name, 1, ENDED)

    def recover(self) -> None:
        """Jobs a previous server left unfinished have no process any more: mark them FAILED."""
        for name in self.records.names(PIPELINE_JOBS, not_states=TERMINAL):
            self.finish(name, 1, ENDED)


def start_runs(
    state: EmulatorState, manager: JobManager, metadata: MetadataRecords
) -> PipelineJobRunner:
    """The PipelineJobRunner of ``state``'s emulator (its server makes one): each run's
    lineage recorded in ``metadata``, the runs a previous server left recovered, every run
    terminated when the emulator stops."""
    runs = PipelineJobRunner(state, manager)
    # jobs a store kept before List filtered on times
    migrate.reindex(state.records, PIPELINE_JOBS)
    lineage = PipelineLineage(state, metadata)
    runs.on_start(lineage.started)
    runs.on_end(lineage.ended)
    runs.on_read(lineage.current)
    runs.recover()
    state.on_close(runs.terminate_all)
    return runs
