"""Reduction Server sizing: reducers whose total egress matches the GPU replicas' egress.

``reducers = ceil(sum of egress of every GPU replica in pools 0 and 1 / egress of one reducer)``
(Vertex distributed-training guide). Also the bytes each worker sends per all-reduce:
``2K(n-1)/n`` with ring all-reduce, ``K`` with a Reduction Server.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache
from typing import Any

from trainpool import catalog
from trainpool.errors import brief
from trainpool.plan.errors import PlanError, Problem
from trainpool.plan.machine_rules import gpu_count

DEFAULT_REDUCER = "n1-highcpu-16"
MIN_REDUCER_GBPS = 32
BYTES_PER_MB = 1024 * 1024


def worker_egress_gbps(pools: list[dict[str, Any]]) -> float:
    """Total egress of the GPU replicas in pools 0 and 1.

    Catalog egress figures are whole Gbps, so a float sum of them is exact.
    """
    total = 0.0
    for pool in pools[:2]:
        machine = (pool or {}).get("machineSpec") or {}
        gpus = gpu_count(machine)
        if not pool or gpus == 0:
            continue
        try:
            egress = catalog.vm_egress_gbps(
                machine["machineType"], machine.get("acceleratorType"), gpus
            )
        except catalog.UnknownName:
            continue
        total += egress * int(pool.get("replicaCount", 1))
    return total


def reducer_count(worker_gbps: float, reducer_gbps: float) -> int:
    """Reducers needed so that their total egress is at least the workers'."""
    return max(1, math.ceil(Fraction(worker_gbps) / Fraction(reducer_gbps)))


@cache
def cheapest_reducer() -> str:
    """The CPU machine with the lowest $/Gbps-hour among verified ones of >= 32 Gbps."""
    eligible = [
        m
        for m in catalog.machines().values()
        if m.fixed_gpu is None
        and m.verified
        and m.price_usd_per_hour is not None
        and m.egress_gbps >= MIN_REDUCER_GBPS
    ]
    best = min(eligible, key=lambda m: ((m.price_usd_per_hour or 0.0) / m.egress_gbps, m.name))
    return best.name


MAX_GRADIENT_MB = 10_000_000.0
"""trainpool's bound on a gradient's size (10 TB: a 5-trillion-parameter model in 16 bits)."""


def check_gradient_size(gradient_size_mb: object) -> None:
    """PlanError unless ``gradient_size_mb`` is a number of MiB above 0 and at most
    :data:`MAX_GRADIENT_MB` (``nan``, ``inf`` and negative sizes are refused)."""
    ok = (
        isinstance(gradient_size_mb, int | float)
        and not isinstance(gradient_size_mb, bool)
        and 0 < gradient_size_mb <= MAX_GRADIENT_MB
    )
    if not ok:
        raise PlanError(
            [
                Problem(
                    "gradient_size_mb",
                    f"{brief(gradient_size_mb)} is not accepted; accepted: a number of MiB "
                    f"above 0 and at most {MAX_GRADIENT_MB:,.0f}",
                )
            ]
        )


def allreduce_bytes(gradient_size_mb: float, gpu_replicas: int) -> dict[str, Any]:
    """Bytes one worker sends per all-reduce of a ``gradient_size_mb`` MiB gradient."""
    size = int(gradient_size_mb * BYTES_PER_MB)
    n = max(gpu_replicas, 1)
    ring = 2 * size * (n - 1) // n
    return {
        "gradientSizeBytes": size,
        "gpuReplicas": gpu_replicas,
        "ringBytesPerWorker": ring,
        "reductionServerBytesPerWorker": size,
        "ringToReductionServerRatio": round(ring / size, 4) if size else 0.0,
    }
