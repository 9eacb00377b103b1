"""A Markdown summary of a finished CustomJob: pools, replicas, duration, state, link."""

from __future__ import annotations

from typing import Any

from trainpool.vertex.clients import console_url

ROLES = ("primary", "workers", "servers", "evaluators")


def _pool_row(index: int, pool: dict[str, Any]) -> str:
    if not pool:
        return f"| {index} | {ROLES[index]} | 0 | (skipped) | |"
    machine = pool.get("machineSpec", {})
    accel = machine.get("acceleratorType", "")
    hardware = machine.get("machineType", "")
    if accel:
        hardware += f" + {machine.get('acceleratorCount', 1)} x {accel}"
    image = (pool.get("containerSpec") or {}).get("imageUri", "")
    if not image and pool.get("pythonPackageSpec"):
        image = "python package " + pool["pythonPackageSpec"].get("pythonModule", "")
    replicas = int(pool.get("replicaCount", 0))
    return f"| {index} | {ROLES[index]} | {replicas} | {hardware} | `{image}` |"


def custom_job_markdown(job: dict[str, Any], duration_s: float | None) -> str:
    """The summary of ``job`` (REST JSON as ``CustomJob.to_json`` writes it)."""
    name = job.get("name", "")
    pools = job.get("jobSpec", {}).get("workerPoolSpecs", [])
    lines = [
        f"# {job.get('displayName', name)}",
        "",
        f"- job: [{name}]({console_url(name)})",
        f"- state: **{job.get('state', '')}**",
        f"- duration: {'not run' if duration_s is None else f'{duration_s:.0f}s'}",
    ]
    error = job.get("error", {}).get("message")
    if error:
        lines.append(f"- error: {error}")
    lines += ["", "| pool | role | replicas | machine | image |", "|---|---|---|---|---|"]
    lines += [_pool_row(i, pool) for i, pool in enumerate(pools)]
    return "\n".join(lines) + "\n"
