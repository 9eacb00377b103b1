"""``trainpool env CLUSTER_FILE --replica workerpool1-0 [--trial 3] [--json]``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer

from trainpool.cli._common import fail

REPLICA = re.compile(r"^workerpool([0-3])-(\d+)$")


def _job_spec(path: Path) -> dict[str, Any]:
    """A CustomJobSpec from a JSON/YAML file: the spec itself, ``plan --json`` output,
    or a cluster request (planned with trainpool.plan)."""
    from trainpool.errors import InputError
    from trainpool.spec.safe_load import load_yaml_file

    try:
        data = load_yaml_file(path, "CLUSTER_FILE")
    except InputError as err:
        fail(str(err))
    if not isinstance(data, dict):
        fail(f"CLUSTER_FILE: {str(path)!r} holds no mapping; accepted: a CustomJobSpec or request")
    if "customJobSpec" in data:
        data = data["customJobSpec"]
    if "workerPoolSpecs" in data or "worker_pool_specs" in data:
        return data
    from trainpool.plan import plan_cluster
    from trainpool.spec import load_request

    return plan_cluster(load_request(data)).to_dict()["customJobSpec"]


def env_command(
    cluster_file: Annotated[
        Path, typer.Argument(help="A CustomJobSpec, `plan --json` output, or a cluster request.")
    ],
    replica: str = typer.Option(..., "--replica", help="workerpool<N>-<index>, e.g. workerpool1-0"),
    trial: str = typer.Option("", "--trial", help="Hyperparameter-tuning trial id, e.g. 3"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    local: bool = typer.Option(False, "--local", help="127.0.0.1 ports, as the emulator gives."),
    job_id: str = typer.Option("JOB_ID", "--job-id"),
    project: str = typer.Option("PROJECT_NUMBER", "--project"),
    region: str = typer.Option("us-central1", "--region"),
) -> None:
    """Print the environment a replica would get, before paying for a launch."""
    from trainpool.cluster_env import build_env, local_hosts, vertex_hosts

    match = REPLICA.match(replica)
    if not match:
        fail(f"--replica: {replica!r}; accepted: workerpool<0-3>-<index>, e.g. workerpool1-0")
    try:
        spec = _job_spec(cluster_file)
        hosts = local_hosts(spec) if local else vertex_hosts(spec)
        env = build_env(
            spec,
            int(match[1]),
            int(match[2]),
            hosts=hosts,
            trial_id=trial or None,
            job_id=job_id,
            project=project,
            region=region,
        )
    except ValueError as err:
        fail(str(err))
    if as_json:
        typer.echo(json.dumps(env, indent=2))
        return
    for name, value in env.items():
        typer.echo(f"{name}={value}")


def register(app: typer.Typer) -> None:
    app.command("env")(env_command)
