"""``trainpool jobs report JOB``: a sweep's trials report (the pipeline's HTML) as a local file.

On the emulator, trials whose resource carries no per-step measurements get them from
the metric files the emulator keeps (``<root>/jobs/<id>/trial-<n>/hypertune/``). Trials a
stopping rule stopped early are marked (``trainpool.vertex.sweep.stopped_trials``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from trainpool import emulator_client
from trainpool.cli._common import fail
from trainpool.cli.job_lookup import Job, Location, Project, Root, client, fetch
from trainpool.home import JobFiles


def measurements_from_files(job: dict[str, Any], files: JobFiles) -> None:
    """Give every trial without ``measurements`` those of its emulator metric file."""
    from trainpool.runtime.hypertune import read_metrics

    for trial in job.get("trials", []):
        if trial.get("measurements"):
            continue
        records = read_metrics(str(files.trial(trial["id"]).metric_file()))
        trial["measurements"] = [
            {
                "stepCount": str(record.global_step),
                "metrics": [{"metricId": k, "value": v} for k, v in record.values.items()],
            }
            for record in records
        ]


def report_command(
    job: Job,
    out: Annotated[
        Path | None, typer.Option(help="Where to write the HTML (default: ./trials-<id>.html).")
    ] = None,
    project: Project = "",
    location: Location = "us-central1",
    root: Root = None,
) -> None:
    """Write a sweep's trials report (charts and a sortable table) and print its path."""
    from trainpool.config import EMULATOR_ENV
    from trainpool.reports.page import trials_page
    from trainpool.reports.sweep_data import from_job
    from trainpool.vertex.jobs import to_rest_json
    from trainpool.vertex.sweep import stopped_trials

    jobs = client(location)
    kind, found = fetch(jobs, job, project, location)
    job_id = found.name.rsplit("/", 1)[-1]
    if kind != "hyperparameterTuningJobs":
        fail(f"JOB: {found.name} is a CustomJob; accepted: a HyperparameterTuningJob (a sweep)")
    rest = to_rest_json(found)
    files = emulator_client.current(root).job(job_id)
    if os.environ.get(EMULATOR_ENV) and files.dir.is_dir():
        try:
            measurements_from_files(rest, files)
        except ValueError as err:  # a metric file line that is not a measurement
            typer.echo(f"warning: per-step curves left out: {err}", err=True)
    path = (out or Path(f"trials-{job_id}.html")).resolve()
    path.write_text(trials_page(from_job(rest, stopped_trials(jobs, rest))), encoding="utf-8")
    typer.echo(str(path))
