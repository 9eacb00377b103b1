"""Rules across pools: Reduction Server needs GPU workers and CPU reducers; evaluator count."""

from __future__ import annotations

from typing import Any

from trainpool import catalog
from trainpool.cluster_env.layout import is_reduction_server
from trainpool.plan.findings import Findings, is_whole
from trainpool.plan.machine_rules import gpu_count
from trainpool.plan.naming import Namer


def gpu_replicas(pools: list[dict[str, Any]]) -> int:
    """Replicas with GPUs in pools 0 and 1."""
    total = 0
    for pool in pools[:2]:
        count = pool.get("replicaCount") if pool else 0
        if is_whole(count) and gpu_count(pool.get("machineSpec") or {}) > 0:
            total += count
    return total


def _machine(pool: dict[str, Any]) -> catalog.Machine | None:
    try:
        return catalog.machine(str((pool.get("machineSpec") or {}).get("machineType", "")))
    except catalog.UnknownName:
        return None


def check_cluster(pools: list[dict[str, Any]], names: Namer, found: Findings) -> None:
    """Rules that look at several pools at once."""
    if len(pools) > 3 and pools[3] and is_whole(pools[3].get("replicaCount")):
        if pools[3]["replicaCount"] > 1:
            found.warn(
                names.pool(3, "replicaCount"),
                f"{pools[3]['replicaCount']} evaluators; TensorFlow expects at most one",
            )
    if len(pools) < 3 or not pools[2] or not is_reduction_server(pools[2]):
        return
    _check_reducers(pools, names, found)


def _check_reducers(pools: list[dict[str, Any]], names: Namer, found: Findings) -> None:
    machine = pools[2].get("machineSpec") or {}
    if machine.get("acceleratorType") or machine.get("acceleratorCount"):
        found.error(
            names.pool(2, "machineSpec.acceleratorType"),
            f"{machine.get('acceleratorType') or machine.get('acceleratorCount')} is not "
            "accepted; accepted: no accelerators (reducers are CPU-only)",
        )
    reducer = _machine(pools[2])
    if reducer is not None and reducer.fixed_gpu is not None:
        found.error(
            names.pool(2, "machineSpec.machineType"),
            f"{reducer.name!r} has GPUs; accepted: a CPU machine type such as "
            "n1-highcpu-16 or n2-highcpu-16",
        )
    elif reducer is not None and not reducer.verified:
        found.warn(
            names.pool(2, "machineSpec.machineType"),
            f"{reducer.name} has unverified catalog figures (egress "
            f"{reducer.egress_gbps:g} Gbps, {reducer.source}); n1-highcpu-16 is verified",
        )
    gpus = gpu_replicas(pools)
    if gpus == 0:
        found.advise(
            names.pool(2),
            "Reduction Server with CPU-only primary and workers; accepted: GPU primary "
            "or workers (Reduction Server speeds up NCCL all-reduce between GPU VMs)",
        )
    elif gpus < 2:
        found.warn(
            names.pool(2),
            f"{gpus} GPU replica; a Reduction Server needs at least two "
            "GPU replicas to reduce anything",
        )
    for index, pool in enumerate(pools[:2]):
        trained = _machine(pool) if pool else None
        if trained is not None and trained.fixed_gpu is not None and trained.fixed_gpu.gpudirect:
            found.warn(
                names.pool(index, "machineSpec.machineType"),
                f"{trained.name} has GPUDirect networking "
                f"({trained.egress_gbps:g} Gbps); a Reduction Server does not pay there",
            )
