"""Submit a compiled pipeline to Vertex AI Pipelines, and create or replace its schedule.

The requests are built offline by the aiplatform SDK's own ``PipelineJob`` (it
reads the YAML, builds the runtime config and refuses unknown parameter names),
then sent through ``trainpool.vertex.clients``, so they reach Vertex or the
emulator alike. Sending through the client rather than ``PipelineJob.submit()``
also skips the SDK's attempt to create the pipeline-root bucket first, which
would call Cloud Storage even when the emulator is meant: the bucket must exist.

Caching is off for every task (a retrain must train). A schedule embeds its
pipeline, so a changed YAML needs a new schedule: :func:`create_or_replace_schedule`
creates the new one, then deletes every older one of the same display name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from trainpool.errors import InputError
from trainpool.spec.timing import check_zone, split_cron
from trainpool.vertex import clients

MAX_CONCURRENT_RUNS = 1
_SA = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_ID = re.compile(r"^[a-z0-9][-a-z0-9.:]*[a-z0-9]$")


class SubmitError(InputError):
    """Bad submit input; ``str()`` is one problem per line: field, value, what is accepted."""


@dataclass(frozen=True)
class Target:
    """Where a pipeline goes: project, location, pipeline root and run-as identity."""

    project: str
    location: str
    pipeline_root: str
    service_account: str = ""

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.location}"


def check_target(target: Target) -> list[str]:
    """The problems with ``target`` (empty when it is fine)."""
    problems = []
    if not _ID.match(target.project):
        problems.append(f"--project: {target.project!r}; accepted: a project id such as my-project")
    if not re.match(r"^[a-z]+(-[a-z]+)+\d+$", target.location):
        problems.append(
            f"--location: {target.location!r}; accepted: a Vertex AI region such as us-central1"
        )
    if not re.match(r"^gs://[a-z0-9][-_.a-z0-9]*[a-z0-9](/.*)?$", target.pipeline_root):
        problems.append(
            f"--pipeline-root: {target.pipeline_root!r}; accepted: gs://BUCKET or gs://BUCKET/PATH"
        )
    if target.service_account and not _SA.match(target.service_account):
        problems.append(
            f"--service-account: {target.service_account!r}; accepted: an email such as "
            "trainer@my-project.iam.gserviceaccount.com"
        )
    return problems


def cron_with_timezone(cron: str, timezone: str = "") -> str:
    """``cron`` with Vertex's ``TZ=`` prefix when a time zone is given.

    Raises :class:`SubmitError` naming the bad field.
    """
    problems = []
    body = cron
    if re.match(r"^\s*(CRON_)?TZ=", cron):
        problems.append(
            f"--schedule: {cron!r} carries its own time zone; accepted: the five cron fields, "
            "with the zone in --timezone"
        )
    else:
        try:
            body = split_cron(cron)[1]
        except ValueError as err:
            problems.append(f"--schedule: {err}")
    if timezone:
        try:
            check_zone(timezone)
        except ValueError as err:
            problems.append(f"--timezone: {err}")
    if problems:
        raise SubmitError(problems)
    return f"TZ={timezone} {body}" if timezone else body


def build_pipeline_job(
    template_path: str | Path,
    target: Target,
    parameter_values: dict[str, Any],
    display_name: str = "",
) -> tuple[str, Any]:
    """``(job_id, aiplatform_v1.PipelineJob)``: the exact request, built offline, caching off.

    Raises :class:`SubmitError` for a bad target or parameter, before anything is sent.
    """
    problems = check_target(target)
    if problems:
        raise SubmitError(problems)
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import aiplatform, aiplatform_v1

    try:
        sdk_job = aiplatform.PipelineJob(
            display_name=cast(str, display_name or None),
            template_path=str(template_path),
            pipeline_root=target.pipeline_root,
            parameter_values=parameter_values,
            enable_caching=False,
            project=target.project,
            location=target.location,
            credentials=AnonymousCredentials(),
        )
    except ValueError as err:
        raise SubmitError([f"--param: {err}"]) from err
    resource = sdk_job._gca_resource
    job = aiplatform_v1.PipelineJob.deserialize(type(resource).serialize(resource))
    job.display_name = display_name or str(sdk_job.pipeline_spec["pipelineInfo"]["name"])
    if target.service_account:
        job.service_account = target.service_account
    return sdk_job.job_id, job


def build_schedule(
    job: Any, target: Target, cron: str, display_name: str, allow_queueing: bool = False
) -> Any:
    """The ``aiplatform_v1.Schedule`` that runs ``job`` on ``cron``, one run at a time.

    One at a time is ``max_concurrent_active_run_count`` = 1 ("the maximum number of active
    runs that can be executed concurrently for this Schedule"; schedule.proto):
    ``max_concurrent_run_count`` alone limits only the runs being *started* ("the limit
    for starting the scheduled requests and not the execution of the operations/jobs
    created by the requests"), so it would let a long run overlap the next. A run that
    comes due while one is active is skipped, or queued behind it with ``allow_queueing``.
    """
    from google.cloud import aiplatform_v1

    embedded = aiplatform_v1.PipelineJob(
        display_name=job.display_name,
        pipeline_spec=job.pipeline_spec,
        runtime_config=job.runtime_config,
        labels=job.labels,
        service_account=job.service_account,
    )
    return aiplatform_v1.Schedule(
        display_name=display_name,
        cron=cron,
        max_concurrent_run_count=MAX_CONCURRENT_RUNS,
        max_concurrent_active_run_count=MAX_CONCURRENT_RUNS,
        allow_queueing=allow_queueing,
        create_pipeline_job_request=aiplatform_v1.CreatePipelineJobRequest(
            parent=target.parent, pipeline_job=embedded
        ),
    )


def submit(job_id: str, job: Any, target: Target) -> Any:
    """Create the PipelineJob; returns it as the server answered."""
    client = clients.pipeline_client(target.location)
    return client.create_pipeline_job(
        parent=target.parent, pipeline_job=job, pipeline_job_id=job_id
    )


def schedules_named(display_name: str, target: Target) -> list[Any]:
    """The schedules of ``target`` whose display name is exactly ``display_name``."""
    from google.cloud import aiplatform_v1

    client = clients.schedule_client(target.location)
    escaped = display_name.replace("\\", "\\\\").replace('"', '\\"')
    request = aiplatform_v1.ListSchedulesRequest(
        parent=target.parent, filter=f'display_name="{escaped}"'
    )
    listed = client.list_schedules(request=request)
    return [s for s in listed if s.display_name == display_name]


def create_or_replace_schedule(schedule: Any, target: Target) -> tuple[Any, list[str]]:
    """Create ``schedule``, then delete the older ones of its display name.

    Creating first means a refused create leaves the old schedule in place.
    Returns the new schedule and the names of the deleted ones.
    """
    client = clients.schedule_client(target.location)
    older = schedules_named(schedule.display_name, target)
    created = client.create_schedule(parent=target.parent, schedule=schedule)
    deleted = []
    for old in older:
        client.delete_schedule(name=old.name).result()
        deleted.append(old.name)
    return created, deleted
