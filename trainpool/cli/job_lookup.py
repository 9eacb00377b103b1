"""What the ``trainpool jobs`` commands share: their options and finding a job by name or id."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from trainpool.cli._common import fail

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


def client(location: str) -> Any:
    from trainpool.vertex.clients import job_client

    try:
        return job_client(location)
    except ValueError as err:
        fail(str(err))


def parent(project: str, location: str) -> str:
    if not project:
        fail("--project: not given; accepted: a project id (or set GOOGLE_CLOUD_PROJECT)")
    return f"projects/{project}/locations/{location}"


def fetch(job_client: Any, job: str, project: str, location: str) -> tuple[str, Any]:
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
        where = parent(project, location)
        names = [(kind, f"{where}/{kind}/{job}") for kind in KINDS]
    for kind, name in names:
        try:
            return kind, getattr(job_client, f"get_{KINDS[kind]}")(name=name)
        except exceptions.NotFound as err:
            missing = err
        except exceptions.GoogleAPICallError as err:
            fail(str(err), 1)
    fail(str(missing), 1)
