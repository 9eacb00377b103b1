"""Hourly cost of a CustomJobSpec from the catalog's on-demand list prices (us-central1)."""

from __future__ import annotations

from typing import Any

from trainpool import catalog
from trainpool.cluster_env.layout import is_reduction_server

ROLES = ("primary", "workers", "parameterServers", "evaluators")
PRICING = "Compute Engine on-demand list prices, us-central1 (Vertex training bills about 1.15x)"


def _replica_price(machine: dict[str, Any]) -> float | None:
    price = catalog.machine_price(machine["machineType"])
    accel = machine.get("acceleratorType")
    if price is None or not accel or catalog.fixed_gpu(machine["machineType"]) is not None:
        return price
    gpu_price = catalog.accelerator_price(accel)
    if gpu_price is None:
        return None
    return price + gpu_price * int(machine.get("acceleratorCount", 0))


def job_cost(pools: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-pool and total $/hour; pools without a known price are listed in ``unpriced``."""
    rows = []
    unpriced = []
    total = reducers = 0.0
    for index, pool in enumerate(pools):
        if not pool:
            continue
        reducer = index == 2 and is_reduction_server(pool)
        role = "reductionServer" if reducer else ROLES[index]
        each = _replica_price(pool["machineSpec"])
        count = int(pool.get("replicaCount", 0))
        if each is None:
            unpriced.append(role)
            continue
        rows.append(
            {
                "pool": index,
                "role": role,
                "replicaCount": count,
                "perReplicaPerHour": round(each, 4),
                "perHour": round(each * count, 4),
            }
        )
        total += each * count
        reducers += each * count if reducer else 0.0
    training = total - reducers
    return {
        "currency": "USD",
        "pricing": PRICING,
        "pools": rows,
        "jobPerHour": round(total, 4),
        "reducersPerHour": round(reducers, 4),
        "reducerOverheadPercent": round(100 * reducers / training, 2) if training else None,
        "unpriced": unpriced,
    }
