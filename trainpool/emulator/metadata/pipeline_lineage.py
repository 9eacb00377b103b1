"""A PipelineJob's lineage in Vertex ML Metadata, recorded as Vertex Pipelines records it.

From the outside of the run (``PipelineJobRunner.on_start`` and ``on_end``), in the
``default`` MetadataStore of the job's location (made when missing):

- at start: a ``system.Pipeline`` Context named after the pipeline (``pipelineInfo.name``;
  ``aiplatform.get_pipeline_df(pipeline=NAME)`` reads ``contexts/NAME``), a
  ``system.PipelineRun`` Context named after the job's id, its child, and the run's
  ``system.Run`` Execution (display name the job's id, state RUNNING, each pipeline
  parameter as ``input:NAME`` in its metadata) in both; ``job_detail.pipeline_context``
  and ``pipeline_run_context`` name them, so ``PipelineJob.submit(experiment=...)`` can
  add the run to an experiment while it runs;
- at the end: one Execution per task (its ``schemaTitle``, display name the task's name,
  state, metadata ``input:``/``output:`` parameters), one Artifact per distinct artifact
  URI of the run (schema title, URI, metadata: a ``system.Metrics`` artifact holds the
  metrics the task logged), INPUT and OUTPUT events, all in the run's Context; the
  ``system.Run`` Execution ends COMPLETE, FAILED or CANCELLED with OUTPUT events to the
  pipeline's own output artifacts and to every metrics artifact (``METRICS_SCHEMAS``: kfp's
  ``Metrics``, ``ClassificationMetrics`` with its ``confusionMatrix`` and
  ``confidenceMetrics``, ...) any task wrote, declared as a pipeline output or not; each
  task detail's ``execution`` is the stored one.

What the SDK reads it with, and so what this follows (google-cloud-aiplatform 1.165.1):
``pipeline_jobs.py`` (``_get_context``, ``_query_experiment_row``: the ``system.Run``
Execution's ``input:`` metadata and state, the run Context's metrics artifacts;
``get_associated_experiment``), ``metadata/metadata.py`` (``get_pipeline_df``: the
``system.Run`` Executions ``in_context`` of the pipeline Context, their output artifacts'
metadata, in ``_LegacyExperimentService._query_runs_to_data_frame``; ``pipeline_jobs.py``
``_query_experiment_row`` instead lists the run Context's ``system.Metrics`` and
``google.*Metrics`` artifacts, so ``get_experiment_df`` has no kfp ``ClassificationMetrics``
columns, on Vertex as here), Google's vertex-ai-samples notebook
``notebooks/official/pipelines/metrics_viz_run_compare_kfp.ipynb`` (``metric.accuracy``,
``metric.confidenceMetrics`` of tasks' undeclared outputs), and the SDK's own fixtures of a
pipeline run (``tests/unit/aiplatform/test_metadata.py``,
``_TEST_PIPELINE_SYSTEM_RUN_EXECUTION``), googleapis/python-aiplatform
commit 3219d51921dbc9b65734a793dbab9619d0a7547d; that the pipeline's Context is named after
the pipeline: avast/wanna-ml#83 ("it can clash with different resource in the metastore").
"""

from __future__ import annotations

import json
import re
from typing import Any

from google.cloud.aiplatform_v1.types import artifact as artifact_types
from google.cloud.aiplatform_v1.types import context as context_types
from google.cloud.aiplatform_v1.types import event as event_types
from google.cloud.aiplatform_v1.types import execution as execution_types
from google.cloud.aiplatform_v1.types.pipeline_state import PipelineState
from google.protobuf import struct_pb2

from trainpool.emulator.metadata.metadata_records import MetadataRecords
from trainpool.emulator.records.kinds import ARTIFACTS, CONTEXTS, EXECUTIONS, PIPELINE_JOBS
from trainpool.emulator.state import EmulatorState

SCHEMA_VERSION = "0.0.1"
_STATES = {
    "SUCCEEDED": execution_types.Execution.State.COMPLETE,
    "FAILED": execution_types.Execution.State.FAILED,
    "CANCELLED": execution_types.Execution.State.CANCELLED,
    "SKIPPED": execution_types.Execution.State.COMPLETE,
    "RUNNING": execution_types.Execution.State.RUNNING,
}
# The artifacts a run's tasks write that Vertex also makes outputs of the run's
# ``system.Run`` Execution, so ``get_pipeline_df`` shows their metadata as ``metric.*``
# (``metadata/metadata.py``, ``_LegacyExperimentService._query_runs_to_data_frame``:
# ``run_execution.get_output_artifacts()``, every one's metadata; Google's
# metrics_viz_run_compare_kfp notebook reads ``metric.accuracy`` and
# ``metric.confidenceMetrics`` there for a pipeline that declares no outputs). kfp's metrics
# types (``kfp/dsl/types/artifact_types.py``) and those ``pipeline_jobs.py``
# ``_query_experiment_row`` reads for ``get_experiment_df`` (``metadata/constants.py``).
METRICS_SCHEMAS = frozenset(
    {
        "system.Metrics",
        "system.ClassificationMetrics",
        "system.SlicedClassificationMetrics",
        "google.ClassificationMetrics",
        "google.RegressionMetrics",
        "google.ForecastingMetrics",
    }
)
_RUN_STATES = {
    PipelineState.PIPELINE_STATE_SUCCEEDED: execution_types.Execution.State.COMPLETE,
    PipelineState.PIPELINE_STATE_FAILED: execution_types.Execution.State.FAILED,
    PipelineState.PIPELINE_STATE_CANCELLED: execution_types.Execution.State.CANCELLED,
}


def context_id(pipeline_name: str) -> str:
    """A pipeline's name as a Context id (lowercase letters, digits, '-'; 4-128)."""
    text = re.sub(r"[^a-z0-9-]+", "-", pipeline_name.lower()).strip("-") or "pipeline"
    return text.ljust(4, "-")[:128]


def _struct(values: dict[str, Any]) -> Any:
    message = struct_pb2.Struct()
    message.update(values)
    return message


class PipelineLineage:
    """The hooks that record PipelineJobs' lineage in one emulator's ML Metadata."""

    def __init__(self, state: EmulatorState, metadata: MetadataRecords) -> None:
        self.state = state
        self.metadata = metadata

    def _store(self, job_name: str) -> str:
        store = job_name.split("/pipelineJobs/")[0] + "/metadataStores/default"
        self.metadata.ensure_store(store)
        return store

    def started(self, job: Any, spec: dict[str, Any], values: dict[str, Any]) -> None:
        store = self._store(job.name)
        job_id = job.name.rsplit("/", 1)[-1]
        pipeline_name = spec.get("pipelineInfo", {}).get("name", "") or "pipeline"
        pipeline = self._context(store, context_id(pipeline_name), pipeline_name, "system.Pipeline")
        run = self._context(store, job_id, job_id, "system.PipelineRun")
        self.metadata.links.add_children(pipeline.name, [run.name])
        parameters = {
            name: body["defaultValue"]
            for name, body in spec.get("root", {})
            .get("inputDefinitions", {})
            .get("parameters", {})
            .items()
            if "defaultValue" in body
        }
        parameters.update(values)
        root = execution_types.Execution(
            display_name=job_id,
            schema_title="system.Run",
            schema_version=SCHEMA_VERSION,
            state=execution_types.Execution.State.RUNNING,
        )
        execution_types.Execution.pb(root).metadata.CopyFrom(
            _struct({f"input:{k}": v for k, v in parameters.items()})
        )
        root = self.metadata.create(EXECUTIONS, store, "", root, "execution_id")
        for context in (run.name, pipeline.name):
            self.metadata.links.add_to_context(context, [], [root.name])
        contexts = (self.metadata.require(CONTEXTS, pipeline.name), run)

        def change(stored: Any) -> None:
            stored.job_detail.pipeline_context = contexts[0]
            stored.job_detail.pipeline_run_context = self.metadata.require(CONTEXTS, run.name)

        self.state.records.update(PIPELINE_JOBS, job.name, change, stamp=False)

    def current(self, job: Any) -> None:
        """``job``'s lineage contexts as they are now (a run added to an experiment later
        has the experiment among its parents)."""
        detail = job.job_detail
        if "pipeline_run_context" not in detail:
            return
        for field in ("pipeline_context", "pipeline_run_context"):
            found = self.state.records.get(CONTEXTS, getattr(detail, field).name)
            if found is not None:
                setattr(detail, field, found)

    def _context(self, store: str, resource_id: str, display: str, schema: str) -> Any:
        name = f"{store}/contexts/{resource_id}"
        found = self.state.records.get(CONTEXTS, name)
        if found is not None:
            return found
        context = context_types.Context(
            display_name=display, schema_title=schema, schema_version=SCHEMA_VERSION
        )
        return self.metadata.create(
            CONTEXTS, store, resource_id, context, "context_id", trusted=True
        )

    def ended(self, job: Any) -> None:
        detail = job.job_detail
        if "pipeline_run_context" not in detail:
            return  # the run never started (no lineage to end)
        store = self._store(job.name)
        run = detail.pipeline_run_context.name
        root_task = None
        by_uri: dict[str, str] = {}
        outputs: dict[tuple[str, str], str] = {}
        metrics: list[str] = []  # the tasks' metrics artifacts: the run's outputs too
        executions, artifacts = [], []
        for task in detail.task_details:
            if task.task_id == 1 or not task.parent_task_id:
                root_task = task
                continue
            execution = self._execution(store, task)
            executions.append(execution.name)
            events = []
            for kind, lists in (
                (event_types.Event.Type.INPUT, task.inputs),
                (event_types.Event.Type.OUTPUT, task.outputs),
            ):
                for key, listed in lists.items():
                    for artifact in listed.artifacts:
                        name = by_uri.get(artifact.uri) if artifact.uri else None
                        if name is None:
                            name = self._artifact(store, key, artifact).name
                            if artifact.uri:
                                by_uri[artifact.uri] = name
                        artifacts.append(name)
                        events.append(event_types.Event(artifact=name, type_=kind))
                        if kind == event_types.Event.Type.OUTPUT:
                            outputs[(task.task_name, key)] = name
                            if artifact.schema_title in METRICS_SCHEMAS:
                                metrics.append(name)
            if events:
                self.metadata.links.add_events(execution.name, events)
            task.execution = self.metadata.require(EXECUTIONS, execution.name)
        self.metadata.links.add_to_context(run, list(dict.fromkeys(artifacts)), executions)
        self._end_root(store, run, job, root_task, outputs, metrics)

    def _execution(self, store: str, task: Any) -> Any:
        given = task.execution
        state = _STATES.get(task.state.name, execution_types.Execution.State.NEW)
        if given.state == execution_types.Execution.State.CACHED:
            state = given.state  # served from the cache: Vertex records it CACHED
        execution = execution_types.Execution(
            display_name=task.task_name,
            schema_title=given.schema_title or "system.ContainerExecution",
            schema_version=SCHEMA_VERSION,
            state=state,
        )
        raw = execution_types.Execution.pb(given)
        if raw.HasField("metadata"):
            execution_types.Execution.pb(execution).metadata.CopyFrom(raw.metadata)
        return self.metadata.create(EXECUTIONS, store, "", execution, "execution_id")

    def _artifact(self, store: str, key: str, given: Any) -> Any:
        artifact = artifact_types.Artifact(
            display_name=given.display_name or key,
            uri=given.uri,
            schema_title=given.schema_title or "system.Artifact",
            schema_version=given.schema_version or SCHEMA_VERSION,
            state=artifact_types.Artifact.State.LIVE,
        )
        raw = artifact_types.Artifact.pb(given)
        if raw.HasField("metadata"):
            artifact_types.Artifact.pb(artifact).metadata.CopyFrom(raw.metadata)
        return self.metadata.create(ARTIFACTS, store, "", artifact, "artifact_id")

    def _end_root(
        self,
        store: str,
        run: str,
        job: Any,
        root_task: Any,
        outputs: dict[tuple[str, str], str],
        metrics: list[str],
    ) -> None:
        found = [
            e
            for e in self.metadata.page(
                EXECUTIONS, store, filter=f'in_context("{run}") AND schema_title="system.Run"'
            ).items
        ]
        if not found:
            return
        root = found[0]
        spec = self._spec(job)
        produced = []  # the pipeline's declared outputs, then every task's metrics
        declared = spec.get("root", {}).get("dag", {}).get("outputs", {}).get("artifacts", {})
        for body in declared.values():
            for selector in body.get("artifactSelectors", []):
                name = outputs.get(
                    (selector.get("producerSubtask", ""), selector.get("outputArtifactKey", ""))
                )
                if name is not None:
                    produced.append(name)
        events = [
            event_types.Event(artifact=name, type_=event_types.Event.Type.OUTPUT)
            for name in dict.fromkeys(produced + metrics)
        ]
        if events:
            self.metadata.links.add_events(root.name, events)
        root.state = _RUN_STATES.get(job.state, execution_types.Execution.State.FAILED)
        root.etag = ""
        updated = self.metadata.update(EXECUTIONS, root, None, False)
        if root_task is not None:
            root_task.execution = updated

    def _spec(self, job: Any) -> dict[str, Any]:
        path = self.state.home.pipeline_run(job.name.rsplit("/", 1)[-1]) / "pipeline.json"
        try:
            loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return loaded
