"""``trainpool jobs list | describe | logs [--follow] | cancel | preempt | report``.

Against the emulator when ``VERTEX_AI_EMULATOR_HOST`` is set, else against Vertex
AI in ``--project`` / ``--location``. JOB is a full resource name
(``projects/P/locations/L/customJobs/ID`` or ``.../hyperparameterTuningJobs/ID``)
or a bare id, looked up as a CustomJob first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from trainpool.cli._common import fail

jobs_app = typer.Typer(
    help="List, describe, follow and cancel training jobs.", no_args_is_help=True
)

Project = Annotated[
    str,
    typer.Option(envvar="GOOGLE_CLOUD_PROJECT", help="Project (default $GOOGLE_CLOUD_PROJECT)."),
]
Location = Annotated[str, typer.Option(help="Region.")]
Job = Annotated[str, typer.Argument(help="Resource name, or the id of a job in --project.")]
Root = Annotated[
    Path | None,
    typer.Option(help="The emulator's root (default: $TRAINPOOL_HOME or ./.trainpool)."),
]
KINDS = {"customJobs": "custom_job", "hyperparameterTuningJobs": "hyperparameter_tuning_job"}


def _client(location: str) -> Any:
    from trainpool.vertex.clients import job_client

    try:
        return job_client(location)
    except ValueError as err:
        fail(str(err))


def _parent(project: str, location: str) -> str:
    if not project:
        fail("--project: not given; accepted: a project id (or set GOOGLE_CLOUD_PROJECT)")
    return f"projects/{project}/locations/{location}"


def _fetch(client: Any, job: str, project: str, location: str) -> tuple[str, Any]:
    """``(kind, job)`` of a resource name or bare id; exits with the API's message if absent."""
    from google.api_core import exceptions

    if "/" in job:
        parts = job.split("/")
        if len(parts) != 6 or parts[4] not in KINDS:
            fail(
                f"JOB: {job!r} is not a job name; accepted: projects/P/locations/L/"
                "customJobs/ID, .../hyperparameterTuningJobs/ID, or a bare ID"
            )
        names = [(parts[4], job)]
    else:
        parent = _parent(project, location)
        names = [(kind, f"{parent}/{kind}/{job}") for kind in KINDS]
    for kind, name in names:
        try:
            return kind, getattr(client, f"get_{KINDS[kind]}")(name=name)
        except exceptions.NotFound as err:
            missing = err
        except exceptions.GoogleAPICallError as err:
            fail(str(err), 1)
    fail(str(missing), 1)


@jobs_app.command("list")
def list_command(project: Project = "", location: Location = "us-central1") -> None:
    """List CustomJobs and HyperparameterTuningJobs, oldest first."""
    from google.api_core import exceptions

    client = _client(location)
    parent = _parent(project, location)
    rows = []
    try:
        for kind, method in KINDS.items():
            for job in getattr(client, f"list_{method}s")(parent=parent):
                rows.append((job.create_time, kind, job))
    except exceptions.GoogleAPICallError as err:
        fail(str(err), 1)
    typer.echo(f"{'ID':<12} {'KIND':<8} {'STATE':<24} {'CREATED':<20} DISPLAY NAME")
    for created, kind, job in sorted(rows, key=lambda row: row[0]):
        label = "custom" if kind == "customJobs" else "sweep"
        when = created.strftime("%Y-%m-%d %H:%M:%S")
        typer.echo(
            f"{job.name.rsplit('/', 1)[-1]:<12} {label:<8} {job.state.name:<24} {when:<20} "
            f"{job.display_name}"
        )


@jobs_app.command("describe")
def describe_command(job: Job, project: Project = "", location: Location = "us-central1") -> None:
    """Print the whole job resource as JSON (trials included for a sweep)."""
    kind, found = _fetch(_client(location), job, project, location)
    typer.echo(type(found).to_json(found, indent=2, use_integers_for_enums=False))


@jobs_app.command("cancel")
def cancel_command(job: Job, project: Project = "", location: Location = "us-central1") -> None:
    """Ask the service to cancel a job (it ends CANCELLED once every replica has stopped)."""
    from google.api_core import exceptions

    client = _client(location)
    kind, found = _fetch(client, job, project, location)
    try:
        getattr(client, f"cancel_{KINDS[kind]}")(name=found.name)
    except exceptions.GoogleAPICallError as err:
        fail(str(err), 1)
    typer.echo(f"cancel requested: {found.name}")


@jobs_app.command("preempt")
def preempt_command(job: Job, project: Project = "", location: Location = "us-central1") -> None:
    """Preempt a RUNNING SPOT or FLEX_START CustomJob on the emulator, as Compute Engine
    reclaims Spot VMs: its replicas are stopped and it ends FAILED (STOCKOUT)."""
    import grpc

    from trainpool.config import EMULATOR_ENV, emulator_host
    from trainpool.emulator.faults_service import preempt_job

    client = _client(location)
    kind, found = _fetch(client, job, project, location)
    address = emulator_host()
    if address is None:
        fail(
            f"{found.name} runs on Vertex AI, which has no API to preempt a job; "
            f"accepted: a job of the emulator (set {EMULATOR_ENV})",
            1,
        )
    if kind != "customJobs":
        fail(
            f"JOB: {found.name} is a HyperparameterTuningJob; accepted: a CustomJob (a trial's "
            "is its Trial.custom_job)"
        )
    try:
        ended = preempt_job(address, found.name)
    except grpc.RpcError as err:
        fail(f"{err.code().name}: {err.details()}", 1)
    typer.echo(f"preempted: {ended.name} is {ended.state.name}: {ended.error.message}")


@jobs_app.command("logs")
def logs_command(
    job: Job,
    follow: Annotated[bool, typer.Option(help="Keep printing until the job ends.")] = False,
    project: Project = "",
    location: Location = "us-central1",
    root: Root = None,
) -> None:
    """Print every replica's log (emulator); on Vertex, say where the logs are."""
    from trainpool.config import EMULATOR_ENV, default_root
    from trainpool.emulator import logs
    from trainpool.spec.states import job_is_final

    client = _client(location)
    kind, found = _fetch(client, job, project, location)
    if not os.environ.get(EMULATOR_ENV):
        fail(
            f"{found.name} runs on Vertex AI: its logs are in Cloud Logging; "
            f"`gcloud ai custom-jobs stream-logs {found.name}` follows them",
            1,
        )
    job_dir = (root or default_root()) / "jobs" / found.name.rsplit("/", 1)[-1]
    if not job_dir.is_dir():
        fail(
            f"--root: {job_dir} does not exist; accepted: the --root the emulator was started "
            "with (its jobs/ directory holds the logs)"
        )
    if not follow:
        for line in logs.read(job_dir):
            typer.echo(line)
        return
    method = getattr(client, f"get_{KINDS[kind]}")

    def finished() -> bool:
        return job_is_final(method(name=found.name).state.name)

    for line in logs.follow(job_dir, finished):
        typer.echo(line)


def register(app: typer.Typer) -> None:
    from trainpool.cli.jobs_report import report_command

    jobs_app.command("report")(report_command)
    app.add_typer(jobs_app, name="jobs")
