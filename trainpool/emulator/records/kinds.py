"""The kinds of resource the emulator stores, each a collection of one proto-plus message: what
a :class:`Kind` is, and each of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.cloud.aiplatform_v1.types import artifact as artifact_types
from google.cloud.aiplatform_v1.types import context as context_types
from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import execution as execution_types
from google.cloud.aiplatform_v1.types import hyperparameter_tuning_job as hptj
from google.cloud.aiplatform_v1.types import metadata_schema as schema_types
from google.cloud.aiplatform_v1.types import metadata_store as store_types
from google.cloud.aiplatform_v1.types import model as model_types
from google.cloud.aiplatform_v1.types import persistent_resource as pr
from google.cloud.aiplatform_v1.types import pipeline_job as pj
from google.cloud.aiplatform_v1.types import schedule as sc
from google.cloud.aiplatform_v1.types import study as study_types
from google.cloud.aiplatform_v1.types import tensorboard as tb
from google.cloud.aiplatform_v1.types import tensorboard_experiment as tbe
from google.cloud.aiplatform_v1.types import tensorboard_run as tbr
from google.cloud.aiplatform_v1.types import tensorboard_time_series as tbts
from google.cloud.aiplatform_v1.types import training_pipeline as tp
from google.cloud.aiplatform_v1.types.job_state import JobState
from google.cloud.aiplatform_v1.types.pipeline_state import PipelineState
from google.cloud.devtools.cloudbuild_v1.types import cloudbuild as cb

from trainpool.emulator.records import paging


@dataclass(frozen=True)
class Kind:
    """A collection of resources: ``collection`` as in their names (``customJobs``), the
    proto-plus ``message``, what a message calls it (``CustomJob``), the enum whose
    member names a ``state=`` filter takes (None: the kind has no state), and the string
    fields a filter may name (``indexed``: stored in ``resource_fields`` when not empty)."""

    collection: str
    message: Any
    label: str
    states: Any = None
    state_field: str = "state"
    indexed: tuple[str, ...] = ()
    computed: tuple[tuple[str, Callable[[Any], str]], ...] = ()
    """Indexed string fields read by a function (a PipelineJob's ``pipeline_name``)."""
    times: tuple[str, ...] = ()
    """Timestamp fields a filter compares and an ``order_by`` names."""
    default_order: str = ""
    """The order of a List that names none ("": creation order)."""

    def filterable(self) -> tuple[str, ...]:
        return (*self.indexed, *(name for name, _ in self.computed))

    def fields_of(self, resource: Any) -> dict[str, str]:
        """The indexed fields of ``resource`` that are set (times as :func:`paging.time_text`)."""
        found = {f: str(getattr(resource, f)) for f in self.indexed if getattr(resource, f, "")}
        for name, read in self.computed:
            value = read(resource)
            if value:
                found[name] = value
        for name in self.times:
            moment = getattr(resource, name, None)
            if moment:
                found[name] = paging.time_text(moment)
        return found

    def state_of(self, resource: Any) -> int:
        return int(getattr(resource, self.state_field, 0) or 0) if self.states else 0

    def state_value(self, name: str) -> int:
        member = self.states.__members__.get(name) if self.states is not None else None
        return int(member) if member is not None else -1

    def stamps_updates(self) -> bool:
        return "update_time" in self.message.meta.fields


CUSTOM_JOBS = Kind("customJobs", cj.CustomJob, "CustomJob", JobState)
TUNING_JOBS = Kind(
    "hyperparameterTuningJobs", hptj.HyperparameterTuningJob, "HyperparameterTuningJob", JobState
)


def pipeline_name(job: Any) -> str:
    """A PipelineJob's ``pipeline_name``: its spec's ``pipelineInfo.name``."""
    info = job.pipeline_spec.get("pipelineInfo") if job.pipeline_spec else None
    return str(info.get("name", "")) if info else ""


PIPELINE_JOBS = Kind(
    "pipelineJobs",
    pj.PipelineJob,
    "PipelineJob",
    PipelineState,
    indexed=("schedule_name", "template_uri"),
    computed=(("pipeline_name", pipeline_name),),
    times=("create_time", "update_time", "start_time", "end_time"),
    default_order="create_time desc",
)
"""ListPipelineJobsRequest (aiplatform v1 ``pipeline_service.proto``): filters on
``pipeline_name``, ``template_uri`` and the times; "if order_by is not specified, it will
order by default order is create time in descending order"."""
TRAINING_PIPELINES = Kind(
    "trainingPipelines", tp.TrainingPipeline, "TrainingPipeline", PipelineState
)
MODELS = Kind("models", model_types.Model, "Model")
"""A Model as ListModels and ``GetModel(models/ID)`` answer it: its default version."""
MODEL_VERSIONS = Kind(
    "modelVersions", model_types.Model, "Model", times=("create_time", "update_time")
)
"""One version of a Model (``models/ID@N``, its parent ``models/ID``): ListModelVersionsRequest
orders by ``create_time`` and ``update_time`` and filters on ``labels``
(:mod:`trainpool.emulator.model_registry.models`)."""
SCHEDULES = Kind("schedules", sc.Schedule, "Schedule", sc.Schedule.State)
BUILDS = Kind("builds", cb.Build, "Build", cb.Build.Status, state_field="status")
PERSISTENT_RESOURCES = Kind(
    "persistentResources", pr.PersistentResource, "PersistentResource", pr.PersistentResource.State
)
METADATA_STORES = Kind("metadataStores", store_types.MetadataStore, "MetadataStore")
CONTEXTS = Kind("contexts", context_types.Context, "Context")
ARTIFACTS = Kind("artifacts", artifact_types.Artifact, "Artifact", artifact_types.Artifact.State)
EXECUTIONS = Kind(
    "executions", execution_types.Execution, "Execution", execution_types.Execution.State
)
METADATA_SCHEMAS = Kind("metadataSchemas", schema_types.MetadataSchema, "MetadataSchema")
TENSORBOARDS = Kind("tensorboards", tb.Tensorboard, "Tensorboard")
TENSORBOARD_EXPERIMENTS = Kind("experiments", tbe.TensorboardExperiment, "TensorboardExperiment")
TENSORBOARD_RUNS = Kind("runs", tbr.TensorboardRun, "TensorboardRun")
TENSORBOARD_TIME_SERIES = Kind("timeSeries", tbts.TensorboardTimeSeries, "TensorboardTimeSeries")
STUDIES = Kind("studies", study_types.Study, "Study", study_types.Study.State)
TRIALS = Kind("trials", study_types.Trial, "Trial", study_types.Trial.State)

KINDS = {
    kind.collection: kind
    for kind in (
        CUSTOM_JOBS,
        TUNING_JOBS,
        PIPELINE_JOBS,
        TRAINING_PIPELINES,
        MODELS,
        SCHEDULES,
        BUILDS,
        PERSISTENT_RESOURCES,
        METADATA_STORES,
        CONTEXTS,
        ARTIFACTS,
        EXECUTIONS,
        METADATA_SCHEMAS,
        TENSORBOARDS,
        TENSORBOARD_EXPERIMENTS,
        TENSORBOARD_RUNS,
        TENSORBOARD_TIME_SERIES,
        STUDIES,
        TRIALS,
    )
}


def kind_of(name: str) -> Kind:
    """The kind of a resource name (``projects/P/locations/L/customJobs/ID``); KeyError if none."""
    return KINDS[name.split("/")[-2]]


def parent_of(name: str) -> str:
    """``projects/P/locations/L`` of ``projects/P/locations/L/KIND/ID``."""
    return name.rsplit("/", 2)[0]
