"""``google.cloud.aiplatform.v1.PipelineService``: PipelineJobs that run locally.

Create, Get, List and Cancel. A created job's pipeline spec is written to
``<root>/pipelines/<id>/pipeline.json`` and run in the background by
``trainpool run --local`` (kfp.local against this emulator), in its own process
group, with its transcript in ``<root>/pipelines/<id>/run.log``. The job's
state follows that process: RUNNING, then SUCCEEDED or FAILED by its exit
status; Cancel stops the process group and ends in CANCELLED.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import grpc
from google.cloud.aiplatform_v1.types import pipeline_job as pj
from google.cloud.aiplatform_v1.types import pipeline_service as ps
from google.cloud.aiplatform_v1.types.pipeline_state import PipelineState
from google.protobuf import empty_pb2, json_format
from google.rpc import code_pb2

from trainpool.config import EMULATOR_ENV, HOME_ENV
from trainpool.emulator import processes, validation
from trainpool.emulator.list_filter import page_after, paginate
from trainpool.emulator.rpc import RpcError, invalid, not_found, precondition, unary
from trainpool.emulator.state import EmulatorState
from trainpool.spec.states import FINAL_PIPELINE_STATES

SERVICE = "google.cloud.aiplatform.v1.PipelineService"
KIND = "pipelineJobs"

JOB_ID = re.compile(r"^[a-z0-9][-a-z0-9]{0,127}$")
TERMINAL = frozenset(getattr(PipelineState, name) for name in FINAL_PIPELINE_STATES)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS pipeline_jobs (
  name TEXT PRIMARY KEY,
  parent TEXT NOT NULL,
  seq INTEGER NOT NULL,
  state INTEGER NOT NULL,
  proto BLOB NOT NULL
);
"""
_FAILED = re.compile(r"^pipeline \S+ FAILED: ")
_RUN_CLI = "from trainpool.cli import main; main()"


def _now() -> datetime:
    return datetime.now(timezone.utc)


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


class PipelineService:
    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.db = state.db
        self.db.executescript(_SCHEMA)
        self._lock = threading.RLock()
        self._runs: dict[str, processes.Replica] = {}
        self._closed = False

    def get(self, name: str) -> Any:
        validation.check_name(name, KIND)
        rows = self.db.execute("SELECT proto FROM pipeline_jobs WHERE name = ?", (name,))
        if not rows:
            raise not_found(f"PipelineJob {name} not found.")
        return pj.PipelineJob.deserialize(rows[0]["proto"])

    def _save(self, job: Any) -> None:
        job.update_time = _now()
        self.db.execute(
            "UPDATE pipeline_jobs SET state = ?, proto = ? WHERE name = ?",
            (int(job.state), pj.PipelineJob.serialize(job), job.name),
        )

    def create(self, request: ps.CreatePipelineJobRequest) -> Any:
        validation.check_parent(request.parent)
        job: Any = request.pipeline_job
        message = pj.PipelineJob.pb(job)
        spec = json_format.MessageToDict(message.pipeline_spec)
        values = json_format.MessageToDict(message.runtime_config).get("parameterValues", {})
        if "root" not in spec or "pipelineInfo" not in spec:
            raise invalid(
                "pipeline_job.pipeline_spec: has no 'root' and 'pipelineInfo'; "
                "accepted: a compiled KFP pipeline (the YAML `trainpool compile` writes)"
            )
        root_uri = job.runtime_config.gcs_output_directory
        if not root_uri.startswith("gs://"):
            raise invalid(
                f"pipeline_job.runtime_config.gcs_output_directory: {root_uri!r}; "
                "accepted: a pipeline root such as gs://BUCKET/PATH"
            )
        declared = spec["root"].get("inputDefinitions", {}).get("parameters", {})
        unknown = sorted(set(values) - set(declared))
        if unknown:
            raise invalid(
                f"pipeline_job.runtime_config.parameter_values: {', '.join(unknown)} not declared "
                f"by the pipeline; accepted: {', '.join(sorted(declared)) or 'none'}"
            )
        job_id = request.pipeline_job_id or self.state.new_id("pipeline")
        if not JOB_ID.match(job_id):
            raise invalid(
                f"pipeline_job_id: {job_id!r}; accepted: up to 128 lowercase letters, "
                "digits and hyphens, starting with a letter or digit"
            )
        job.name = f"{request.parent}/{KIND}/{job_id}"
        job.state = PipelineState.PIPELINE_STATE_QUEUED
        job.create_time = job.update_time = _now()
        with self._lock:
            if self.db.execute("SELECT 1 FROM pipeline_jobs WHERE name = ?", (job.name,)):
                raise RpcError(grpc.StatusCode.ALREADY_EXISTS, f"PipelineJob {job.name} exists.")
            self.db.execute(
                "INSERT INTO pipeline_jobs (name, parent, seq, state, proto) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    job.name,
                    request.parent,
                    int(self.state.new_id("pipeline-seq")),
                    int(job.state),
                    pj.PipelineJob.serialize(job),
                ),
            )
            self._start(job, spec, values)
        return self.get(job.name)

    def _start(self, job: Any, spec: dict[str, Any], values: dict[str, Any]) -> None:
        folder = self.state.root / "pipelines" / job.name.rsplit("/", 1)[-1]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "pipeline.json").write_text(json.dumps(spec, sort_keys=True), encoding="utf-8")
        argv = [sys.executable, "-c", _RUN_CLI, "run", str(folder / "pipeline.json"), "--local"]
        argv += ["--root", str(self.state.root)]
        _, project, _, location, *_ = job.name.split("/")
        argv += ["--project", project, "--location", location]  # the run's own, as on Vertex
        argv += ["--pipeline-root", job.runtime_config.gcs_output_directory]
        argv += param_args(values)
        env = dict(os.environ, **{EMULATOR_ENV: self.state.address, HOME_ENV: str(self.state.root)})
        launch = processes.Launch("pipeline", 0, argv, env, self.state.root, folder / "run.log")
        try:
            run = processes.start(launch)
        except OSError as err:
            self._finish(job.name, 127, f"could not start the local run: {err}")
            return
        self._runs[job.name] = run
        job.state = PipelineState.PIPELINE_STATE_RUNNING
        job.start_time = _now()
        self._save(job)
        threading.Thread(target=self._wait, args=(job.name, run), daemon=True).start()

    def _wait(self, name: str, run: processes.Replica) -> None:
        code = run.proc.wait()
        with self._lock:
            if not self._closed:
                self._finish(name, code, failure_summary(run.launch.log))

    def _finish(self, name: str, code: int, log_tail: str) -> None:
        with self._lock:
            self._runs.pop(name, None)
            job = self.get(name)
            if job.state in TERMINAL:
                return
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
            job.end_time = _now()
            self._save(job)

    def list(self, request: ps.ListPipelineJobsRequest) -> ps.ListPipelineJobsResponse:
        validation.check_parent(request.parent)
        rows = self.db.execute(
            "SELECT seq, proto FROM pipeline_jobs WHERE parent = ? AND seq > ? ORDER BY seq",
            (request.parent, page_after(request.page_token)),
        )
        items, token = paginate(
            [(r["seq"], pj.PipelineJob.deserialize(r["proto"])) for r in rows], request
        )
        return ps.ListPipelineJobsResponse(pipeline_jobs=items, next_page_token=token)

    def cancel(self, request: ps.CancelPipelineJobRequest) -> empty_pb2.Empty:
        with self._lock:
            job = self.get(request.name)
            if job.state in TERMINAL:
                raise precondition(
                    f"Cannot cancel PipelineJob {job.name}: it is already {job.state.name}."
                )
            job.state = PipelineState.PIPELINE_STATE_CANCELLING
            self._save(job)
            run = self._runs.get(job.name)
        if run is None:
            self._finish(job.name, 1, "")
        else:
            processes.stop([run])
        return empty_pb2.Empty()

    def stop_all(self) -> None:
        """On emulator stop: end every local run; their jobs end FAILED."""
        with self._lock:
            self._closed = True
            runs = dict(self._runs)
        processes.stop(list(runs.values()))
        for name in runs:
            self._finish(name, 1, "the emulator stopped while the pipeline ran")

    def recover(self) -> None:
        """Jobs a previous server left unfinished have no process any more: mark them FAILED."""
        marks = ",".join("?" * len(TERMINAL))
        rows = self.db.execute(
            f"SELECT name FROM pipeline_jobs WHERE state NOT IN ({marks})",
            [int(s) for s in TERMINAL],
        )
        for row in rows:
            self._finish(row["name"], 1, "the emulator stopped while the pipeline ran")


def handler(state: EmulatorState) -> grpc.GenericRpcHandler:
    """The PipelineService handler."""
    service = PipelineService(state)
    service.recover()
    state.on_stop(service.stop_all)
    ser_job = pj.PipelineJob.serialize
    methods = {
        "CreatePipelineJob": unary(service.create, ps.CreatePipelineJobRequest, ser_job),
        "GetPipelineJob": unary(lambda r: service.get(r.name), ps.GetPipelineJobRequest, ser_job),
        "ListPipelineJobs": unary(
            service.list, ps.ListPipelineJobsRequest, ps.ListPipelineJobsResponse.serialize
        ),
        "CancelPipelineJob": unary(
            service.cancel, ps.CancelPipelineJobRequest, empty_pb2.Empty.SerializeToString
        ),
    }
    return grpc.method_handlers_generic_handler(SERVICE, methods)
