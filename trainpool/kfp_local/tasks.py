"""Each task of a local run as Vertex AI Pipelines runs and reports it.

kfp.local's orchestrators run every leaf task through ``task_executor.execute_single_task``;
:func:`install` wraps it (kfp.local offers no extension point) so that, for the task about
to run, the run:

- gives it an id (its ``task_id`` in the job's ``task_details``) and records its state as
  it goes: RUNNING, SUCCEEDED or FAILED, CANCELLED when the run was cancelled while it ran,
  ``SKIPPED`` with its execution ``CACHED`` for a cache hit (``PipelineTaskDetail.State``:
  "SKIPPED: Specifies task was skipped due to cache hit"; ``Execution.State.CACHED``,
  aiplatform v1 ``pipeline_job.proto`` and ``execution.proto``);
- looks its cache key up (:mod:`trainpool.kfp_local.cache`) when its ``cachingOptions`` say
  so, and uses the earlier execution's outputs instead of running it, or keeps its outputs
  once it SUCCEEDED;
- lays its outputs out as Vertex does under the pipeline root: ``{job_id}/{task_id}/
  {output_key}`` (``PipelineJob.RuntimeConfig.gcs_output_directory``, aiplatform v1
  ``pipeline_job.proto``: "The artifact paths are generated with a sub-path pattern
  ``{job_id}/{task_id}/{output_key}`` under the specified output directory"), the project's
  number first and the task's name before its id, as Vertex's paths read:
  ``<root>/<project number>/<job id>/<task name>_<task id>/<output>``;
- writes to the task's log the settings it cannot apply on this machine (resources and
  accelerators: on Vertex they choose the machine the task runs on,
  https://cloud.google.com/vertex-ai/docs/pipelines/machine-types).

Retries (``set_retry``) stay kfp.local's: each attempt starts the task again under the same
id; a failed attempt that is retried is a RUNNING status with its error in the task's
history (``PipelineTaskStatus.error``: "If the state is a non-final state, the error
indicates a system-error being retried"), the last attempt's end its final state.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format

from trainpool.kfp_local import cache, interrupt
from trainpool.kfp_local.context import current_run


@dataclass
class Current:
    """The task the calling thread runs now."""

    name: str
    task_id: int
    notes: tuple[str, ...]
    signals: int = 0
    """How many signals the run had when the task started."""
    retries: int = 0
    """How many times a failed attempt is retried (``set_retry``)."""
    attempts: int = 0
    v1_output: str = ""
    """A kfp 1.8 Python component's executor output file (its ``parameters`` are read into
    ``parameterValues`` once it succeeds: :func:`trainpool.spec.kfp_v1.executor_output`)."""


_local = threading.local()


def current() -> Current | None:
    """The task this thread runs (None outside one)."""
    return getattr(_local, "task", None)


def settings_notes(task_spec: Any, container: Any) -> tuple[str, ...]:
    """A line for each setting of the task that this machine does not apply."""
    notes = []
    if container is not None and container.HasField("resources"):
        resources = container.resources
        asked = [
            ("set_cpu_limit", resources.resource_cpu_limit or _number(resources.cpu_limit)),
            ("set_memory_limit", resources.resource_memory_limit or _gib(resources.memory_limit)),
            ("set_cpu_request", resources.resource_cpu_request or _number(resources.cpu_request)),
            (
                "set_memory_request",
                resources.resource_memory_request or _gib(resources.memory_request),
            ),
        ]
        for setting, value in asked:
            if value:
                notes.append(
                    f"{setting}({value!r}) not applied locally: on Vertex it chooses a machine "
                    "that has it; here the task shares this machine's CPUs and memory"
                )
        accelerator = resources.accelerator
        kind = accelerator.resource_type or accelerator.type
        count = accelerator.resource_count or str(accelerator.count or "")
        if kind or count:
            notes.append(
                f"set_accelerator_type({kind!r}) x {count or 1} not applied locally: this "
                "machine gives the task no accelerator; it runs on CPU"
            )
    return tuple(notes)


def _number(value: float) -> str:
    return f"{value:g}" if value else ""


def _gib(value: float) -> str:
    return f"{value:g}G" if value else ""


def _wrap(original: Callable[..., Any]) -> Callable[..., Any]:
    from kfp.local import status
    from kfp.local.orchestrator.orchestrator_utils import OrchestratorUtils

    def execute_single_task(
        task_name: str,
        task_spec: Any,
        pipeline_resource_name: str,
        components: dict[str, Any],
        executors: dict[str, Any],
        io_store: Any,
        pipeline_root: str,
        runner: Any,
        unique_pipeline_id: str,
        fail_stack: list[str],
    ) -> tuple[dict[str, Any], Any]:
        run = current_run()
        arguments = dict(
            task_name=task_name,
            task_spec=task_spec,
            pipeline_resource_name=pipeline_resource_name,
            components=components,
            executors=executors,
            io_store=io_store,
            pipeline_root=pipeline_root,
            runner=runner,
            unique_pipeline_id=unique_pipeline_id,
            fail_stack=fail_stack,
        )
        if run is None:
            return original(**arguments)  # type: ignore[no-any-return]
        interrupt.check()  # no task starts once the run is cancelled
        component_name = task_spec.component_ref.name
        component = components[component_name]
        executor = executors[component.executor_label]
        container = executor.container if executor.WhichOneof("spec") == "container" else None
        task_id = run.log.new_id()
        run.log.begin(task_id, task_name)
        cache_key = ""
        if container is not None and task_spec.caching_options.enable_cache:
            cache_key = cache.key(
                (run.project, run.location, run.pipeline),
                component_name,
                json_format.MessageToDict(component),
                json_format.MessageToDict(container),
                OrchestratorUtils.make_task_arguments(task_spec.inputs, io_store),
                task_spec.caching_options.cache_key,
            )
            hit = run.cache.get(cache_key) if run.cache is not None else None
            if hit is not None:
                outputs, source = hit
                run.cached(task_id, outputs)
                print(
                    f"Task {task_name} (id {task_id}) is cached: the outputs of task "
                    f"{source.get('task', '?')} of {source.get('job', '?')} are used"
                )
                run.log.end(task_id, "SKIPPED")
                return outputs, status.Status.SUCCESS
        seen = interrupt.seen()
        retries = max(0, task_spec.retry_policy.max_retry_count)
        notes = settings_notes(task_spec, container)
        _local.task = Current(task_name, task_id, notes, seen, retries)
        try:
            outputs, result = original(**arguments)
        except BaseException:
            run.log.end(task_id, "CANCELLED" if interrupt.seen() > seen else "FAILED")
            raise
        finally:
            _local.task = None
        if interrupt.seen() > seen:
            run.log.end(task_id, "CANCELLED")
        elif result == status.Status.SUCCESS:
            run.log.end(task_id, "SUCCEEDED")
            if cache_key and run.cache is not None:
                run.cache.put(cache_key, outputs, {"job": run.job_id, "task": task_name})
        else:
            run.log.end(task_id, "FAILED")
        return outputs, result

    return execute_single_task


def _task_root(original: Callable[..., str]) -> Callable[..., str]:
    def construct_local_task_root(
        pipeline_root: str, pipeline_resource_name: str, task_resource_name: str
    ) -> str:
        run, task = current_run(), current()
        if run is None or task is None:
            return original(pipeline_root, pipeline_resource_name, task_resource_name)
        return os.path.join(
            pipeline_root, run.project_number, run.job_id, f"{task.name}_{task.task_id}"
        )

    return construct_local_task_root


def install() -> None:
    """Wrap kfp.local's task executor and task root (once per process)."""
    from kfp.local import executor_input_utils
    from kfp.local.orchestrator import task_executor

    if getattr(task_executor, "_trainpool_installed", False):
        return
    task_executor.execute_single_task = _wrap(task_executor.execute_single_task)
    executor_input_utils.construct_local_task_root = _task_root(
        executor_input_utils.construct_local_task_root
    )
    task_executor._trainpool_installed = True  # type: ignore[attr-defined]
