"""A Schedule and its runs, through the official clients (Vertex or the emulator alike).

- :func:`find` takes a resource name, a bare id, or a display name (exactly one schedule).
- :func:`runs` lists the schedule's PipelineJobs, oldest first, with the filter the
  aiplatform SDK's ``PipelineJobSchedule.list_jobs()`` sends (``schedule_name=NAME``,
  unquoted; google/cloud/aiplatform/pipeline_job_schedules.py), each with where its model
  is: the pipeline's ``model`` output artifact, as its producing task lists it in the
  run's ``job_detail.task_details`` (Vertex and the emulator fill them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainpool.errors import InputError
from trainpool.vertex import clients

MODEL_OUTPUT = "model"


@dataclass(frozen=True)
class ScheduledJob:
    """A PipelineJob a schedule created: the job, its model's URI ("" when it has none yet), the
    Model (version) it registered ("" when its upload did not run: a gate that said no) and
    the retraining gate's verdict."""

    job: Any
    model_uri: str
    registered: str = ""
    verdict: dict[str, Any] = field(default_factory=dict)
    """The retraining gate's verdict (``promote_model``'s ``verdict`` output: ``decision``,
    both metrics, the versions); {} when no gate ran to success."""


def find(schedule: str, project: str, location: str) -> Any:
    """The schedule named ``schedule`` (resource name, id, or display name); InputError when
    there is none or the display name is ambiguous. API errors propagate."""
    from google.api_core import exceptions

    client = clients.schedule_client(location)
    if "/" in schedule:
        if "/schedules/" not in schedule:
            raise InputError.of(
                "SCHEDULE",
                f"{schedule!r}; accepted: projects/P/locations/L/schedules/ID, an ID, or a "
                "display name",
            )
        return client.get_schedule(name=schedule)
    if not project:
        raise InputError.of("--project", "not given; accepted: a project id")
    parent = f"projects/{project}/locations/{location}"
    if schedule.isdigit():
        try:
            return client.get_schedule(name=f"{parent}/schedules/{schedule}")
        except exceptions.NotFound:
            pass
    escaped = schedule.replace("\\", "\\\\").replace('"', '\\"')
    found = list(
        client.list_schedules(request={"parent": parent, "filter": f'display_name="{escaped}"'})
    )
    if len(found) != 1:
        names = ", ".join(s.name for s in found) or "none"
        raise InputError.of(
            "SCHEDULE",
            f"{schedule!r} names {len(found)} schedules in {parent} ({names}); accepted: "
            "a resource name, an ID, or the display name of exactly one schedule",
        )
    return found[0]


REGISTERED_OUTPUT = "model_name"
"""The output of trainpool's ``upload_model`` and ``promote_model`` components that names the
Model (version) it registered."""
VERDICT_OUTPUT = "verdict"
"""The output of ``promote_model`` (the retraining gate) that holds its verdict."""


def model_uri(job: Any) -> str:
    """The URI of the run's ``model`` output: the artifact of the task the pipeline takes
    its ``model`` output from (``root.dag.outputs.artifacts.model.artifactSelectors``), as
    listed in ``job_detail.task_details``; "" when there is none (yet)."""
    from google.protobuf import json_format

    spec = json_format.MessageToDict(type(job).pb(job).pipeline_spec)
    outputs = spec.get("root", {}).get("dag", {}).get("outputs", {}).get("artifacts", {})
    selectors = outputs.get(MODEL_OUTPUT, {}).get("artifactSelectors", [])
    producer = selectors[0].get("producerSubtask", "") if selectors else ""
    key = selectors[0].get("outputArtifactKey", MODEL_OUTPUT) if selectors else MODEL_OUTPUT
    for task in reversed(job.job_detail.task_details):
        if producer and task.task_name != producer:
            continue
        listed = task.outputs.get(key)
        if listed is not None and listed.artifacts:
            return str(listed.artifacts[0].uri)
    return ""


def runs(schedule_name: str, location: str) -> list[ScheduledJob]:
    """The schedule's PipelineJobs, oldest first, each with its model's URI."""
    client = clients.pipeline_client(location)
    parent = schedule_name.split("/schedules/")[0]
    listed = client.list_pipeline_jobs(
        request={"parent": parent, "filter": f"schedule_name={schedule_name}"}
    )
    jobs = sorted(listed, key=lambda job: job.create_time)
    return [ScheduledJob(job, model_uri(job), registered(job), verdict(job)) for job in jobs]


def registered(job: Any) -> str:
    """The Model the run's ``upload_model`` task registered (its ``model_name`` output), ""
    when none ran to success."""
    for task in job.job_detail.task_details:
        name = (task.execution.metadata or {}).get(f"output:{REGISTERED_OUTPUT}", "")
        if task.state.name == "SUCCEEDED" and name:
            return str(name)
    return ""


def verdict(job: Any) -> dict[str, Any]:
    """The verdict of the run's retraining gate (``promote_model``'s ``verdict`` output), {}
    when no gate ran to success."""
    from google.protobuf import json_format

    for task in job.job_detail.task_details:
        if task.state.name != "SUCCEEDED":
            continue
        metadata = json_format.MessageToDict(type(task.execution).pb(task.execution).metadata)
        found = metadata.get(f"output:{VERDICT_OUTPUT}")
        if isinstance(found, dict) and "decision" in found:
            return found
    return {}
