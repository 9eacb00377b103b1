"""A run's tasks as Vertex reports them: ``PipelineJob.job_detail.task_details``.

Vertex fills one ``PipelineTaskDetail`` per task (aiplatform v1 ``pipeline_job.proto``):
its name, state, times and state history (``pipeline_task_status``), its artifacts in
``inputs``/``outputs``, and its parameters in ``execution.metadata`` as ``input:NAME`` and
``output:NAME`` (what the aiplatform SDK reads: ``model_evaluation_job.py``,
``pipeline_jobs.py``). A local run records each task's executor input as kfp.local
resolves it (:mod:`trainpool.kfp_local.containers`), its states as they come
(:class:`trainpool.kfp_local.tasklog.TaskLog`), and its outputs from the files it wrote; a
cached task (``SKIPPED``, its execution ``CACHED``) shows the outputs it reused;
:meth:`TaskDetails.rest` writes them as REST JSON, with ``gs://`` URIs for artifacts in the
local store. A launcher's ``gcp_resources`` output names the CustomJob or sweep it
created. The PipelineJob's own root task is the emulator's to add.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from trainpool.kfp_local.tasklog import TaskState

_STATES = {
    "RUNNING": "RUNNING",
    "SUCCEEDED": "SUCCEEDED",
    "FAILED": "FAILED",
    "SKIPPED": "SKIPPED",
    "CANCELLED": "CANCELLED",
    "NOT_TRIGGERED": "NOT_TRIGGERED",
}
_EXECUTION = {
    "RUNNING": "RUNNING",
    "SUCCEEDED": "COMPLETE",
    "FAILED": "FAILED",
    "SKIPPED": "CACHED",
    "CANCELLED": "CANCELLED",
}
"""A task's state -> its execution's (``Execution.State``, aiplatform v1 ``execution.proto``)."""


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def output_types(spec: dict[str, Any]) -> dict[str, dict[str, str]]:
    """``{task name: {output parameter: parameterType}}`` of a compiled pipeline."""
    components = spec.get("components", {})
    found: dict[str, dict[str, str]] = {}
    for dag in [spec.get("root", {}), *components.values()]:
        for task, body in dag.get("dag", {}).get("tasks", {}).items():
            component = components.get(body.get("componentRef", {}).get("name", ""), {})
            parameters = component.get("outputDefinitions", {}).get("parameters", {})
            found[task] = {k: str(v.get("parameterType", "STRING")) for k, v in parameters.items()}
    return found


class TaskDetails:
    """The executor inputs of a run's tasks, and their details as Vertex shows them."""

    def __init__(self, gcs_root: Path, spec: dict[str, Any] | None = None) -> None:
        self.gcs_root = gcs_root
        self._types = output_types(spec or {})
        self._inputs: dict[int, dict[str, Any]] = {}
        self._cached: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def record(self, task_id: int, executor_input: dict[str, Any]) -> None:
        """Task ``task_id`` was started with ``executor_input``."""
        with self._lock:
            self._inputs[task_id] = copy.deepcopy(executor_input)

    def cached(self, task_id: int, outputs: dict[str, Any]) -> None:
        """Task ``task_id`` was a cache hit: ``outputs`` (values and ``dsl.Artifact``s) are
        the earlier execution's."""
        from kfp import dsl

        parameters: dict[str, Any] = {}
        artifacts: dict[str, Any] = {}
        for name, value in outputs.items():
            listed = value if isinstance(value, list) else [value]
            if listed and all(isinstance(v, dsl.Artifact) for v in listed):
                artifacts[name] = {
                    "artifacts": [
                        {
                            "uri": a.uri,
                            "metadata": dict(a.metadata),
                            "type": {"schemaTitle": a.schema_title},
                        }
                        for a in listed
                    ]
                }
            else:
                parameters[name] = value
        with self._lock:
            self._cached[task_id] = {"parameterValues": parameters, "artifacts": artifacts}

    def _uri(self, path: str) -> str:
        """A local-store path as its ``gs://`` URI; anything else as it is."""
        try:
            rel = Path(path).resolve().relative_to(self.gcs_root.resolve())
        except ValueError:
            return path
        return f"gs://{rel.as_posix()}"

    def _artifacts(self, lists: dict[str, Any], written: dict[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name, listed in lists.items():
            artifacts = []
            for index, artifact in enumerate(listed.get("artifacts", [])):
                metadata = dict(artifact.get("metadata", {}))
                uri = artifact.get("uri", "")
                extra = written.get(name, {}).get("artifacts", [])
                if index < len(extra):  # the task may name another URI (a model's folder)
                    metadata.update(extra[index].get("metadata", {}))
                    uri = extra[index].get("uri") or uri
                artifacts.append(
                    {
                        "displayName": name,
                        "uri": self._uri(uri),
                        "schemaTitle": artifact.get("type", {}).get("schemaTitle", ""),
                        "metadata": metadata,
                    }
                )
            found[name] = {"artifacts": artifacts}
        return found

    def _written(self, task: str, executor_input: dict[str, Any]) -> dict[str, Any]:
        """What the task wrote: its executor output, and each output parameter's file (read
        by the parameter's declared type, as Vertex reads it: a STRING is its text)."""
        types = self._types.get(task, {})
        outputs = executor_input.get("outputs", {})
        written: dict[str, Any] = {"parameterValues": {}, "artifacts": {}}
        output_file = Path(outputs.get("outputFile", "") or "/nonexistent")
        if output_file.is_file():
            try:
                written.update(json.loads(output_file.read_text(encoding="utf-8")))
            except ValueError:
                pass
        for name, parameter in outputs.get("parameters", {}).items():
            path = Path(parameter.get("outputFile", "") or "/nonexistent")
            if name not in written["parameterValues"] and path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace")
                try:
                    value = text if types.get(name, "STRING") == "STRING" else json.loads(text)
                except ValueError:
                    value = text
                written["parameterValues"][name] = value
        return written

    def rest(self, tasks: list[TaskState]) -> list[dict[str, Any]]:
        """``PipelineTaskDetail``s (REST JSON) of ``tasks``, in the order they started."""
        wall, mono = datetime.now(timezone.utc), time.monotonic()

        def at(moment: float) -> str:
            return _rfc3339(wall - timedelta(seconds=mono - moment))

        with self._lock:
            inputs, cached = dict(self._inputs), dict(self._cached)
        details = []
        for task in tasks:
            state = _STATES.get(task.state, "RUNNING")
            executor_input = inputs.get(task.task_id, {})
            written = self._written(task.name, executor_input) if task.ended is not None else {}
            if task.task_id in cached:
                executor_input = {"outputs": {"artifacts": cached[task.task_id]["artifacts"]}}
                written = {"parameterValues": cached[task.task_id]["parameterValues"]}
            metadata = {
                f"input:{k}": v
                for k, v in executor_input.get("inputs", {}).get("parameterValues", {}).items()
            }
            metadata.update(
                {f"output:{k}": v for k, v in written.get("parameterValues", {}).items()}
            )
            history = []
            for moment, seen, error in task.history:
                status: dict[str, Any] = {
                    "updateTime": at(moment),
                    "state": _STATES.get(seen, "RUNNING"),
                }
                if error:
                    status["error"] = {"code": 2, "message": error}  # google.rpc.Code UNKNOWN
                history.append(status)
            detail: dict[str, Any] = {
                "taskId": str(task.task_id),
                "taskName": task.name,
                "taskUniqueName": task.name,
                "createTime": at(task.started),
                "startTime": at(task.started),
                "state": state,
                "execution": {
                    "displayName": task.name,
                    "state": _EXECUTION.get(state, "NEW"),
                    "schemaTitle": "system.ContainerExecution",
                    "metadata": metadata,
                },
                "inputs": self._artifacts(
                    executor_input.get("inputs", {}).get("artifacts", {}), {}
                ),
                "outputs": self._artifacts(
                    executor_input.get("outputs", {}).get("artifacts", {}),
                    written.get("artifacts", {}),
                ),
                "pipelineTaskStatus": history,
            }
            if task.ended is not None:
                detail["endTime"] = at(task.ended)
            details.append(detail)
        return details

    def write(self, tasks: list[TaskState], path: Path) -> None:
        """Write :meth:`rest` to ``path`` whole (renamed into place)."""
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps({"taskDetails": self.rest(tasks)}), encoding="utf-8")
        partial.replace(path)
