"""A plan as a Markdown table (the Vertex Pipelines UI renders Markdown artifacts).

A pool that names no image gets the pipeline's image at launch. When the pipeline
says which (``pipeline_image``), the report names it for those pools and leaves out
the planner's "no container image" warnings; without one they stay: no image will come.
"""

from __future__ import annotations

from typing import Any

ROLE_NAMES = ("primary", "workers", "parameter servers", "evaluators")
NO_IMAGE = ": no container image;"  # the planner's warning for a pool that names no image


def _accelerators(machine: dict[str, Any]) -> str:
    if not machine.get("acceleratorType"):
        return "-"
    return f"{machine.get('acceleratorCount', '?')} x {machine['acceleratorType']}"


def _runs(pool: dict[str, Any], pipeline_image: str) -> str:
    package = pool.get("pythonPackageSpec")
    if package:
        return f"python -m {package.get('pythonModule', '?')}"
    image = (pool.get("containerSpec") or {}).get("imageUri")
    if image:
        return str(image)
    return f"{pipeline_image} (the pipeline's image)" if pipeline_image else "(none named)"


def warnings(plan: dict[str, Any], pipeline_image: str = "") -> list[str]:
    """The plan's warnings that still hold once pools without an image get ``pipeline_image``."""
    if not pipeline_image:
        return list(plan["warnings"])
    return [warning for warning in plan["warnings"] if NO_IMAGE not in warning]


def pools_table(plan: dict[str, Any], pipeline_image: str = "") -> list[str]:
    """Markdown lines of the pool table of a ``Plan.to_dict()``."""
    priced = {row["pool"]: row for row in plan["cost"]["pools"]}
    lines = [
        "| pool | role | replicas | machine | accelerators | runs | $/h |",
        "|---|---|---|---|---|---|---|",
    ]
    for index, pool in enumerate(plan["customJobSpec"]["workerPoolSpecs"]):
        if not pool:
            lines.append(f"| {index} | (skipped) | | | | | |")
            continue
        role = ROLE_NAMES[index]
        if index == 2 and plan["reductionServer"] is not None:
            role = "Reduction Server"
        price = f"{priced[index]['perHour']:.2f}" if index in priced else "unpriced"
        lines.append(
            f"| {index} | {role} | {pool.get('replicaCount', '?')} | "
            f"{pool['machineSpec']['machineType']} | {_accelerators(pool['machineSpec'])} | "
            f"{_runs(pool, pipeline_image)} | {price} |"
        )
    return lines


def sizing_lines(sizing: dict[str, Any]) -> list[str]:
    """Markdown lines describing a Reduction Server sizing."""
    traffic = sizing["allReduce"]
    mib = 1024 * 1024
    return [
        f"**Reduction Server:** {sizing['replicaCount']} x {sizing['machineType']} = "
        f"{sizing['reducerEgressGbps']:g} Gbps for {sizing['workerEgressGbps']:g} Gbps of "
        f"{sizing['gpuReplicas']} GPU replicas (sized: {sizing['sizedReplicaCount']}); "
        f"${sizing['reducerCostPerHour']:.2f}/h, +{sizing['overheadPercent']}% of the job.",
        "",
        f"**All-reduce per worker** for a {traffic['gradientSizeBytes'] / mib:g} MiB gradient: "
        f"ring {traffic['ringBytesPerWorker'] / mib:.1f} MiB, Reduction Server "
        f"{traffic['reductionServerBytesPerWorker'] / mib:.1f} MiB.",
    ]


def _money(value: float | None) -> str:
    return "unpriced (no Spot price in the catalog)" if value is None else f"${value:.2f}/h"


def cost_lines(cost: dict[str, Any]) -> list[str]:
    """Markdown lines: the same cluster on Spot, and in the cheapest region the catalog prices."""
    lines = [f"**On Spot (us-central1):** {_money(cost['spotPerHour'])}."]
    best = cost["cheapestRegion"]
    if best is None:
        lines.append("**Cheapest region:** unknown (a pool has no price in any region).")
    else:
        lines.append(
            f"**Cheapest region:** {best['region']}, ${best['perHour']:.2f}/h on demand, "
            f"{_money(best['spotPerHour'])} on Spot ({best['note']})."
        )
    return lines


def markdown(plan: dict[str, Any], title: str = "Cluster plan", pipeline_image: str = "") -> str:
    """The whole plan as a Markdown document; ``pipeline_image``: what image-less pools get."""
    cost = plan["cost"]
    lines = [f"## {title}", "", *pools_table(plan, pipeline_image), ""]
    if plan["reductionServer"] is not None:
        lines += [*sizing_lines(plan["reductionServer"]), ""]
    lines.append(f"**Cost:** ${cost['jobPerHour']:.2f}/h ({cost['pricing']}).")
    lines += ["", *cost_lines(cost)]
    found = warnings(plan, pipeline_image)
    if found:
        lines += ["", "### Warnings", "", *(f"- {warning}" for warning in found)]
    return "\n".join(lines) + "\n"
