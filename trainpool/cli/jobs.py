"""``trainpool jobs list | describe | logs [--follow] | cancel | preempt | report``.

Against the emulator when ``VERTEX_AI_EMULATOR_HOST`` is set, else against Vertex
AI in ``--project`` / ``--location``. JOB is a full resource name
(``projects/P/locations/L/customJobs/ID`` or ``.../hyperparameterTuningJobs/ID``)
or a bare id, looked up as a CustomJob first.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from trainpool.cli._common import fail
from trainpool.cli.job_lookup import KINDS, Job, Location, Project, Root, client, fetch, parent
from trainpool.cli.jobs_report import report_command

jobs_app = typer.Typer(
    help="List, describe, follow and cancel training jobs.", no_args_is_help=True
)


@jobs_app.command("list")
def list_command(project: Project = "", location: Location = "us-central1") -> None:
    """List CustomJobs and HyperparameterTuningJobs, oldest first."""
    from google.api_core import exceptions

    jobs_client = client(location)
    where = parent(project, location)
    rows = []
    try:
        for kind, method in KINDS.items():
            for job in getattr(jobs_client, f"list_{method}s")(parent=where):
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
    kind, found = fetch(client(location), job, project, location)
    typer.echo(type(found).to_json(found, indent=2, use_integers_for_enums=False))


@jobs_app.command("cancel")
def cancel_command(job: Job, project: Project = "", location: Location = "us-central1") -> None:
    """Ask the service to cancel a job (it ends CANCELLED once every replica has stopped)."""
    from google.api_core import exceptions

    jobs_client = client(location)
    kind, found = fetch(jobs_client, job, project, location)
    try:
        getattr(jobs_client, f"cancel_{KINDS[kind]}")(name=found.name)
    except exceptions.GoogleAPICallError as err:
        fail(str(err), 1)
    typer.echo(f"cancel requested: {found.name}")


@jobs_app.command("preempt")
def preempt_command(job: Job, project: Project = "", location: Location = "us-central1") -> None:
    """Preempt a RUNNING SPOT or FLEX_START CustomJob on the emulator, as Compute Engine
    reclaims Spot VMs: its replicas are terminated and it ends FAILED (STOCKOUT)."""
    import grpc

    from trainpool.config import EMULATOR_ENV, emulator_host
    from trainpool.emulator_client import preempt_job

    kind, found = fetch(client(location), job, project, location)
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
    from trainpool import emulator_client
    from trainpool.config import EMULATOR_ENV
    from trainpool.emulator.jobs import logs
    from trainpool.spec.states import job_is_final

    jobs_client = client(location)
    kind, found = fetch(jobs_client, job, project, location)
    if not os.environ.get(EMULATOR_ENV):
        fail(
            f"{found.name} runs on Vertex AI: its logs are in Cloud Logging; "
            f"`gcloud ai custom-jobs stream-logs {found.name}` follows them",
            1,
        )
    files = emulator_client.current(root).job(found.name.rsplit("/", 1)[-1])
    if not files.dir.is_dir():
        fail(
            f"--root: {files.dir} does not exist; accepted: the --root the emulator was started "
            "with (its jobs/ directory holds the logs)"
        )
    if not follow:
        for line in logs.read(files):
            typer.echo(line)
        return
    method = getattr(jobs_client, f"get_{KINDS[kind]}")

    def finished() -> bool:
        return job_is_final(method(name=found.name).state.name)

    for line in logs.follow(files, finished):
        typer.echo(line)


def register(app: typer.Typer) -> None:
    jobs_app.command("report")(report_command)
    app.add_typer(jobs_app, name="jobs")
