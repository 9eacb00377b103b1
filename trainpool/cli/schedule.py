"""``trainpool schedule list | show | runs | pause | resume [--catch-up] | delete``.

Against the emulator when ``VERTEX_AI_EMULATOR_HOST`` is set, else against Vertex AI in
``--project`` / ``--location``. SCHEDULE is a resource name, an id, or a display name.
``runs`` is the history: each run's PipelineJob, its state, when it was created, the
training jobs it ran (emulator) and where its model is; on the emulator, then the
schedule's log (each run started, queued or skipped, and why).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from trainpool.cli._common import fail
from trainpool.cli.job_lookup import Location, Project, Root, parent

schedule_app = typer.Typer(
    help="Schedules: list, show, their runs (history), pause, resume, delete.",
    no_args_is_help=True,
)
Schedule = Annotated[str, typer.Argument(help="Resource name, id, or display name.")]


def _find(schedule: str, project: str, location: str) -> Any:
    from google.api_core import exceptions

    from trainpool.errors import InputError
    from trainpool.vertex.schedules import find

    try:
        return find(schedule, project, location)
    except InputError as err:
        fail(str(err))
    except exceptions.GoogleAPICallError as err:
        fail(str(err), 1)


def when(value: Any) -> str:
    """A timestamp as ``2026-11-25 03:00:00`` (UTC), or ``-`` when unset."""
    if not value or value.timestamp() <= 0:
        return "-"
    return str(value.strftime("%Y-%m-%d %H:%M:%S"))


def short(state: Any) -> str:
    return str(state.name).removeprefix("PIPELINE_STATE_").removeprefix("JOB_STATE_")


@schedule_app.command("list")
def list_command(project: Project = "", location: Location = "us-central1") -> None:
    """List the schedules: state, cron, next run, runs started."""
    from google.api_core import exceptions

    from trainpool.vertex.clients import schedule_client

    try:
        found = list(schedule_client(location).list_schedules(parent=parent(project, location)))
    except exceptions.GoogleAPICallError as err:
        fail(str(err), 1)
    typer.echo(f"{'ID':<8} {'STATE':<10} {'NEXT RUN':<20} {'RUNS':<7} {'CRON':<28} DISPLAY NAME")
    for s in sorted(found, key=lambda s: s.create_time):
        runs = f"{s.started_run_count}/{s.max_run_count or '-'}"
        typer.echo(
            f"{s.name.rsplit('/', 1)[-1]:<8} {s.state.name:<10} {when(s.next_run_time):<20} "
            f"{runs:<7} {s.cron:<28} {s.display_name}"
        )


@schedule_app.command("show")
def show_command(
    schedule: Schedule, project: Project = "", location: Location = "us-central1"
) -> None:
    """Print the schedule: its settings, state, counts and last run's response."""
    s = _find(schedule, project, location)
    last = s.last_scheduled_run_response
    rows = [
        ("name", s.name),
        ("display name", s.display_name),
        ("state", s.state.name),
        ("cron", s.cron),
        ("start / end", f"{when(s.start_time)} / {when(s.end_time)}"),
        ("runs started", f"{s.started_run_count} of {s.max_run_count or 'unlimited'}"),
        (
            "concurrency",
            f"{s.max_concurrent_run_count} starting, "
            f"{s.max_concurrent_active_run_count or 'any'} active; a run due at the limit is "
            f"{'queued' if s.allow_queueing else 'skipped'}",
        ),
        ("next run", when(s.next_run_time)),
        ("last paused / resumed", f"{when(s.last_pause_time)} / {when(s.last_resume_time)}"),
        ("last run", f"{when(last.scheduled_run_time)}: {last.run_response or '-'}"),
    ]
    for key, value in rows:
        typer.echo(f"{key + ':':<23} {value}")


def _run_jobs(job_name: str, location: str) -> str:
    """The states of the training jobs a run created, on the emulator (by its run label)."""
    from trainpool.emulator.pipeline_jobs.runs import run_id
    from trainpool.kfp_local.execute import RUN_LABEL
    from trainpool.vertex.clients import job_client

    where = job_name.split("/pipelineJobs/")[0]
    label = f'labels.{RUN_LABEL}="{run_id(job_name)}"'
    client = job_client(location)
    found = list(client.list_custom_jobs(request={"parent": where, "filter": label}))
    found += list(
        client.list_hyperparameter_tuning_jobs(request={"parent": where, "filter": label})
    )
    found.sort(key=lambda job: job.create_time)
    return ",".join(
        short(job.state) + ("(STOCKOUT)" if job.error.message.startswith("STOCKOUT") else "")
        for job in found
    )


def _version(name: str) -> str:
    """``projects/p/locations/l/models/1000@3`` as ``1000@3``."""
    return name.rsplit("/", 1)[-1] if name else "-"


def gate_column(run: Any) -> str:
    """What the run's retraining gate did, in a few words: ``promoted 1000@3 (loss 0.41,
    blessed 1000@2 had 0.45: better by 0.04)``, ``kept blessed 1000@2 (loss 0.47 vs 0.45:
    worse by 0.02; 1000@4 unpromoted)``, ``failed (...)``; the Model registered without a
    gate (``upload_model``), else ``-``."""
    state = short(run.job.state)
    verdict = run.verdict
    if state == "FAILED":
        why = " ".join(str(run.job.error.message).split())
        return f"failed ({why[:80]})" if why else "failed"
    if not verdict:
        return _version(run.registered) if run.registered else "-"
    metric, mine, theirs = verdict["metric"], verdict["challenger"], verdict.get("blessed")
    gain = float(verdict.get("improvement") or 0.0)
    if verdict["decision"] == "promoted":
        if theirs is None:
            return f"promoted {_version(verdict['model'])} ({metric} {mine:g}, the first)"
        return (
            f"promoted {_version(verdict['model'])} ({metric} {mine:g}, blessed "
            f"{_version(verdict.get('blessedVersion', ''))} had {theirs:g}: better by {gain:g})"
        )
    how = "equal" if gain == 0 else f"worse by {-gain:g}" if gain < 0 else f"only {gain:g} better"
    kept = f"{_version(verdict['model'])} unpromoted" if verdict["model"] else "not uploaded"
    return (
        f"kept blessed {_version(verdict.get('blessedVersion', ''))} ({metric} {mine:g} vs "
        f"{theirs:g}: {how}; {kept})"
    )


@schedule_app.command("runs")
def runs_command(
    schedule: Schedule,
    project: Project = "",
    location: Location = "us-central1",
    root: Root = None,
) -> None:
    """The schedule's runs, oldest first: state, created, training jobs, model, and what the
    retraining gate did: promoted (the version now blessed, both metrics), kept the blessed
    version (both metrics; the run's version registered unpromoted, or not uploaded), or
    failed; then (on the emulator) its log: every run started, queued or skipped, and why."""
    import os

    from google.api_core import exceptions

    from trainpool.cluster_env.gcs import to_path
    from trainpool.config import EMULATOR_ENV
    from trainpool.home import Home
    from trainpool.vertex.schedules import runs

    s = _find(schedule, project, location)
    on_emulator = bool(os.environ.get(EMULATOR_ENV))
    home = Home(root) if root else Home.default()
    try:
        found = runs(s.name, location)
    except exceptions.GoogleAPICallError as err:
        fail(str(err), 1)
    typer.echo(f"{s.name} ({s.display_name}): {s.state.name}, {len(found)} run(s)")
    jobs_column = f" {'JOBS':<28}" if on_emulator else ""
    typer.echo(f"{'RUN':<48} {'STATE':<10} {'CREATED':<20}{jobs_column} MODEL  GATE")
    for run in found:
        jobs = f" {_run_jobs(run.job.name, location):<28}" if on_emulator else ""
        model = run.model_uri or "-"
        if on_emulator and run.model_uri:
            model += f" ({to_path(run.model_uri, home.gcs)})"
        typer.echo(
            f"{run.job.name.rsplit('/', 1)[-1]:<48} {short(run.job.state):<10} "
            f"{when(run.job.create_time):<20}{jobs} {model}  {gate_column(run)}"
        )
    log = home.schedule_log(s.name.rsplit("/", 1)[-1])
    if on_emulator and log.is_file():
        typer.echo(f"history ({log}):")
        for line in log.read_text(encoding="utf-8").splitlines():
            typer.echo(f"  {line}")


@schedule_app.command("pause")
def pause_command(
    schedule: Schedule, project: Project = "", location: Location = "us-central1"
) -> None:
    """Pause the schedule: no run starts until it is resumed; started runs go on."""
    _call("pause_schedule", schedule, project, location, "paused")


@schedule_app.command("resume")
def resume_command(
    schedule: Schedule,
    catch_up: Annotated[
        bool, typer.Option("--catch-up", help="Backfill the runs missed while paused.")
    ] = False,
    project: Project = "",
    location: Location = "us-central1",
) -> None:
    """Resume a paused schedule (with --catch-up, the missed runs are backfilled first)."""
    _call("resume_schedule", schedule, project, location, "resumed", catch_up=catch_up)


@schedule_app.command("delete")
def delete_command(
    schedule: Schedule, project: Project = "", location: Location = "us-central1"
) -> None:
    """Delete the schedule; the runs it started are left as they are."""
    _call("delete_schedule", schedule, project, location, "deleted")


def _call(method: str, schedule: str, project: str, location: str, done: str, **extra: Any) -> None:
    from google.api_core import exceptions

    from trainpool.vertex.clients import schedule_client

    s = _find(schedule, project, location)
    try:
        answer = getattr(schedule_client(location), method)(name=s.name, **extra)
        if method == "delete_schedule":
            answer.result()
    except exceptions.GoogleAPICallError as err:
        fail(str(err), 1)
    typer.echo(f"{done}: {s.name}")


def register(app: typer.Typer) -> None:
    app.add_typer(schedule_app, name="schedule")
