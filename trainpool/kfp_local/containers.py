"""The container components a local run can run, and the placeholders Vertex fills.

kfp.local's ``SubprocessRunner`` runs only lightweight Python components, and its
placeholder resolver fails on Vertex's own (``{{$.pipeline_google_cloud_project_id}}``
raises an IndexError, ``{{$.json_escape[1]}}`` is refused; kubeflow/pipelines#10915). A
pipeline made of Google Cloud Pipeline Components (GCPC) is mostly container components
whose command is GCPC's launcher (``python3 -u -m
google_cloud_pipeline_components.container.v1.<op>.launcher``), installed here with GCPC.
:func:`install` swaps two module attributes of kfp.local, the task handler and the
placeholder resolver (kfp.local offers no extension point):

- a lightweight Python component and a GCPC launcher whose Vertex service the emulator
  serves (:data:`LAUNCHERS`) are handed to the run's launcher
  (:class:`trainpool.kfp_local.launching.Launcher`) as they are, ``python3`` included: each
  runs in a sandbox of its image (a GCPC launcher's clients pointed at the emulator by
  :mod:`trainpool.redirect`: the run gives every task that environment);
- anything else is refused before the run starts (:func:`unrunnable`), naming the task,
  its image and why.

Placeholders are filled as Vertex fills them (GCPC ``_placeholders.py``, kfp
``dsl/__init__.py``): the run's project and location, ``""`` for the persistent resource,
service account, network and encryption key, the PipelineJob's resource name,
``{{$.json_escape[N]}}`` the executor input JSON escaped N times; integral numbers in LIST
and STRUCT values are written as integers, as Vertex's backend writes them (kfp.local
writes ``2.0``, which GCPC's ``MetricSpec`` refuses); output folders are made before the
task runs, as Vertex's launcher does. Where tasks see the local store at ``/gcs``, the
executor input is what Vertex gives a task: artifacts' URIs ``gs://BUCKET/...`` (their
``.path`` then ``/gcs/BUCKET/...``) and the files it writes under ``/gcs/``; a
``PipelineTaskFinalStatus`` names the PipelineJob.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from trainpool.errors import InputError, Problem
from trainpool.kfp_local import context, interrupt, tasks
from trainpool.kfp_local.context import JSON_ESCAPE, RunContext, current_run
from trainpool.kfp_local.launching import TaskStart
from trainpool.spec import kfp_v1

EXECUTOR_MAIN = "kfp.dsl.executor_main"
LAUNCHER = re.compile(r"google_cloud_pipeline_components\.container\.(\w+)\.([\w.]+)\.launcher")
LAUNCHERS = {
    "custom_job": "JobService (CustomJob)",
    "hyperparameter_tuning_job": "JobService (HyperparameterTuningJob)",
    "model.upload_model": "ModelService (UploadModel)",
    "model.get_model": "ModelService (GetModel)",
    "model.delete_model": "ModelService (DeleteModel)",
}
"""GCPC v1 launchers whose Vertex service the emulator serves, by module under
``google_cloud_pipeline_components.container.v1``."""


def verdict(command: list[str]) -> tuple[str, str]:
    """``("python" | "launcher" | "", why)``: how a task with ``command`` (command + args)
    runs locally, or why it cannot."""
    text = " ".join(command)
    if EXECUTOR_MAIN in text or kfp_v1.V1_EXECUTOR in text:
        if "ephemeral_component.py" in text:
            return "python", ""
        return "", (
            "a containerized Python component: its code is in its image, which a local run "
            "cannot run"
        )
    found = LAUNCHER.search(text)
    if found is None:
        return "", (
            "a container component: a local run runs lightweight Python components and "
            f"Google Cloud Pipeline Components whose service the emulator serves "
            f"({', '.join(sorted(LAUNCHERS))}), not images"
        )
    version, module = found.groups()
    if version != "v1":
        return (
            "",
            f"GCPC's {version} launcher ({module}) calls an API version the emulator does "
            "not serve (it serves v1)",
        )
    if module not in LAUNCHERS:
        return "", f"GCPC's {module} launcher calls a Vertex service the emulator does not serve"
    return "launcher", ""


def tasks_by_component(spec: Mapping[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    dags = [spec.get("root", {})] + list(spec.get("components", {}).values())
    for dag in dags:
        for task_name, task in dag.get("dag", {}).get("tasks", {}).items():
            ref = task.get("componentRef", {}).get("name", "")
            found.setdefault(ref, []).append(task_name)
    return found


def unrunnable(spec: Mapping[str, Any]) -> list[Problem]:
    """A problem for every task of the compiled pipeline ``spec`` that a local run cannot run."""
    executors = spec.get("deploymentSpec", {}).get("executors", {})
    tasks = tasks_by_component(spec)
    problems = []
    for component_name, component in sorted(spec.get("components", {}).items()):
        container = executors.get(component.get("executorLabel", ""), {}).get("container")
        if container is None:
            continue
        kind, why = verdict([*container.get("command", []), *container.get("args", [])])
        if kind:
            continue
        for task in tasks.get(component_name, [component_name]):
            problems.append(Problem(f"task {task}", f"image {container.get('image', '')!r}: {why}"))
    return problems


def check(spec: Mapping[str, Any]) -> None:
    """Raise :class:`InputError` naming every task a local run cannot run."""
    problems = unrunnable(spec)
    if problems:
        raise InputError(problems)


def _substitute(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for key, replacement in values.items():
            value = value.replace(key, replacement)
        return value
    if isinstance(value, list):
        return [_substitute(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, values) for k, v in value.items()}
    return value


def integral(value: Any) -> Any:
    """``value`` with every integral float inside it an int (``2.0`` → ``2``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [integral(v) for v in value]
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    return value


def _output_paths(executor_input: Mapping[str, Any]) -> Iterator[str]:
    outputs = executor_input.get("outputs", {})
    yield outputs.get("outputFile", "")
    for parameter in outputs.get("parameters", {}).values():
        yield parameter.get("outputFile", "")
    for artifacts in outputs.get("artifacts", {}).values():
        for artifact in artifacts.get("artifacts", []):
            uri = artifact.get("uri", "")
            if uri and "://" not in uri:
                yield uri


def _resolver(original: Callable[..., list[str]]) -> Callable[..., list[str]]:
    def replace_placeholders(
        full_command: list[str],
        executor_input_dict: dict[str, Any],
        pipeline_resource_name: str,
        task_resource_name: str,
        pipeline_root: str,
        unique_pipeline_id: str,
    ) -> list[str]:
        run = current_run()
        if run is None:
            return original(
                full_command,
                executor_input_dict,
                pipeline_resource_name,
                task_resource_name,
                pipeline_root,
                unique_pipeline_id,
            )
        values = run.values()
        command = _substitute(list(full_command), values)
        parameters = executor_input_dict.get("inputs", {}).get("parameterValues", {})
        for name in list(parameters):
            value = _substitute(parameters[name], values)
            parameters[name] = integral(value) if isinstance(value, list | dict) else value
        for path in filter(None, _output_paths(executor_input_dict)):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        task = tasks.current()
        if task is not None:
            run.record(task.task_id, copy.deepcopy(executor_input_dict))
        if kfp_v1.is_v1_component(list(full_command)):
            # kfp 1.8's executor reads ``inputs.parameters`` (Values) and writes its outputs'
            # Values under ``parameters`` (spec.kfp_v1); kfp.local reads ``parameterValues``
            executor_input_dict.setdefault("inputs", {})["parameters"] = kfp_v1.v1_parameters(
                parameters
            )
            if task is not None:
                task.v1_output = str(executor_input_dict.get("outputs", {}).get("outputFile", ""))
        _final_status(parameters, run.resource_name)
        _as_seen(executor_input_dict, run)
        resolved = original(
            command,
            executor_input_dict,
            pipeline_resource_name,
            task_resource_name,
            pipeline_root,
            unique_pipeline_id,
        )
        raw = json.dumps(executor_input_dict)
        escaped = {JSON_ESCAPE.format(0): raw, JSON_ESCAPE.format(1): json.dumps(raw)[1:-1]}
        return [_substitute(part, escaped) for part in resolved]

    return replace_placeholders


def _handler(base: type) -> type:
    from kfp.local import status

    class LocalTaskHandler(base):  # type: ignore[misc, valid-type]
        """Every task through the run's launcher: a lightweight component as its image's
        container would run it, a GCPC launcher as a local process of GCPC's image."""

        def __init__(
            self,
            image: str,
            full_command: list[str],
            pipeline_root: str,
            runner: Any,
            env_vars: dict[str, str] | None = None,
        ) -> None:
            # Outside a local run's launcher (a user's own ``kfp.local`` in the same process),
            # the task is kfp.local's, as if trainpool had not been imported.
            self.outside = current_run() is None
            if self.outside:
                super().__init__(image, full_command, pipeline_root, runner, env_vars)
                return
            self.kind, why = verdict(full_command)
            if not self.kind:
                raise RuntimeError(f"image {image!r}: {why}")
            self.image, self.full_command, self.pipeline_root = image, full_command, pipeline_root
            self.runner, self.env_vars = runner, dict(env_vars or {})

        def run(self) -> Any:
            if self.outside:
                return super().run()
            interrupt.check()
            run, task = current_run(), tasks.current()
            if run is None or task is None:
                raise RuntimeError("a task ran outside a local run's launcher")
            start = TaskStart(
                task.name,
                task.task_id,
                self.image,
                list(self.full_command),
                {**run.environ(self.image), **self.env_vars},
                self.kind,
                task.notes,
            )

            def say(line: str) -> None:
                run.log.say(task.task_id, line)
                print(line)

            task.attempts += 1
            code = run.launcher.run(start, say)
            print("\n")
            if code == 0 and task.v1_output:
                _v1_output(task.v1_output)
            if code != 0 and task.attempts <= task.retries and not interrupt.seen():
                run.log.retried(
                    task.task_id,
                    f"attempt {task.attempts} of {task.retries + 1} exited with status {code}; "
                    "retried (set_retry)",
                )
            return status.Status.SUCCESS if code == 0 else status.Status.FAILURE

    return LocalTaskHandler


def _v1_output(path: str) -> None:
    """The executor output a kfp 1.8 component wrote at ``path``, its output parameters
    where kfp.local reads them (:func:`trainpool.spec.kfp_v1.executor_output`)."""
    try:
        written = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # none written (no outputs), or unreadable: kfp.local says which output is missing
    if isinstance(written, dict) and "parameters" in written:
        Path(path).write_text(json.dumps(kfp_v1.executor_output(written)), encoding="utf-8")


def _final_status(parameters: dict[str, Any], resource_name: str) -> None:
    """A ``PipelineTaskFinalStatus`` input names the PipelineJob as Vertex does (kfp.local
    writes ``local-pipeline-<task>``)."""
    for value in parameters.values():
        if isinstance(value, dict) and {"state", "pipeline_task_name"} <= set(value):
            if str(value.get("pipeline_job_resource_name", "")).startswith("local-pipeline-"):
                value["pipeline_job_resource_name"] = resource_name


def _as_seen(executor_input: dict[str, Any], run: RunContext) -> None:
    """The executor input as the task sees the store (:meth:`RunContext.as_seen`): artifact
    URIs ``gs://``, the files it writes under ``/gcs/``."""
    for side in ("inputs", "outputs"):
        for listed in executor_input.get(side, {}).get("artifacts", {}).values():
            for artifact in listed.get("artifacts", []):
                artifact["uri"] = run.as_seen(artifact.get("uri", ""), path=False)
    outputs = executor_input.get("outputs", {})
    if outputs.get("outputFile"):
        outputs["outputFile"] = run.as_seen(outputs["outputFile"], path=True)
    for parameter in outputs.get("parameters", {}).values():
        if parameter.get("outputFile"):
            parameter["outputFile"] = run.as_seen(parameter["outputFile"], path=True)


def install() -> None:
    """Swap kfp.local's task handler and placeholder resolver and wrap its task executor
    (once per process); they act as kfp.local's own outside a :func:`running` block."""
    from kfp.local import placeholder_utils, subprocess_task_handler

    tasks.install()
    if getattr(subprocess_task_handler, "_trainpool_installed", False):
        return
    subprocess_task_handler.SubprocessTaskHandler = _handler(  # type: ignore[misc]
        subprocess_task_handler.SubprocessTaskHandler
    )
    placeholder_utils.replace_placeholders = _resolver(placeholder_utils.replace_placeholders)
    subprocess_task_handler._trainpool_installed = True  # type: ignore[attr-defined]


class running:  # noqa: N801 - used as a context manager
    """Within the block, tasks' placeholders are filled for ``context``'s run."""

    def __init__(self, context: RunContext) -> None:
        self.context = context

    def __enter__(self) -> RunContext:
        install()
        context.enter(self.context)
        return self.context

    def __exit__(self, *_: object) -> None:
        context.leave(self.context)
