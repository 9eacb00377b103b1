"""Hourly cost of a CustomJobSpec from the catalog's list prices: on demand, on Spot, by region.

``jobPerHour`` stays the us-central1 on-demand figure; ``spotPerHour`` is the same cluster on
Spot there, and ``cheapestRegion`` the cheapest region that offers every pool's machine and has
a price for each (regional prices exist only where a source gave them: the output says so).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from trainpool import catalog
from trainpool.cluster_env.layout import is_reduction_server
from trainpool.plan.region_rules import region_key

ROLES = ("primary", "workers", "parameterServers", "evaluators")
HOME = "us-central1"
PRICING = (
    "Compute Engine and Cloud TPU list prices, us-central1 unless a region is named "
    "(Vertex training bills about 1.15x)"
)


def _names(name: str, accel: str, topology: str) -> tuple[str | None, int]:
    """(price name of the GPU attached to one VM or None, VMs per replica)."""
    shapes = catalog.tpu_shapes().get(name)
    if shapes:
        shape = catalog.tpu_shape(name, topology, accel)
        return None, shape.vms if shape else 1
    known = catalog.machines().get(name)
    return (accel or None) if known and known.fixed_gpu is None else None, 1


def _key(machine: dict[str, Any]) -> tuple[str, str, int, str]:
    return (
        str(machine.get("machineType", "")),
        str(machine.get("acceleratorType") or ""),
        int(machine.get("acceleratorCount") or 0),
        str(machine.get("tpuTopology") or ""),
    )


@cache
def _price(key: tuple[str, str, int, str], region: str, spot: bool) -> float | None:
    name, accel, count, topology = key
    attached, vms = _names(name, accel, topology)
    price = catalog.hourly(name, region, spot=spot)
    if price is None or attached is None:
        return None if price is None else price * vms
    gpu = catalog.hourly(attached, region, spot=spot)
    return None if gpu is None else price + gpu * count


@cache
def _regions(key: tuple[str, str, int, str]) -> frozenset[str]:
    """Regions that offer this machine (where the catalog knows) and price its VM and GPU."""
    name, accel, _, topology = key
    attached, _ = _names(name, accel, topology)
    here = catalog.priced_regions(name)
    if attached is not None:
        here &= catalog.priced_regions(attached)
    offered = catalog.regions_of(region_key({"machineType": name, "acceleratorType": accel})[0])
    return here & offered if offered is not None else here


Item = tuple[int, str, int, tuple[str, str, int, str]]
"""(pool index, role, replica count, price key) of one non-empty pool."""


def _items(pools: list[dict[str, Any]]) -> list[Item]:
    return [
        (index, _role(index, pool), int(pool.get("replicaCount", 0)), _key(pool["machineSpec"]))
        for index, pool in enumerate(pools)
        if pool
    ]


def _role(index: int, pool: dict[str, Any]) -> str:
    return "reductionServer" if index == 2 and is_reduction_server(pool) else ROLES[index]


def _total(items: list[Item], region: str, *, spot: bool) -> float | None:
    """The cluster's $/hour in ``region``, or None when a pool has no price there."""
    total = 0.0
    for _, _, count, key in items:
        each = _price(key, region, spot)
        if each is None:
            return None
        total += each * count
    return round(total, 4)


def _job_cost(items: list[Item]) -> dict[str, Any]:
    """Per-pool and total $/hour in us-central1 (on demand; Spot None when a pool lacks it)."""
    rows = []
    unpriced = []
    total = reducers = 0.0
    spot: float | None = 0.0
    for index, role, count, key in items:
        each = _price(key, HOME, False)
        spot_each = _price(key, HOME, True)
        spot = None if spot is None or spot_each is None else spot + spot_each * count
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
        reducers += each * count if role == "reductionServer" else 0.0
    training = total - reducers
    return {
        "currency": "USD",
        "pricing": PRICING,
        "pools": rows,
        "jobPerHour": round(total, 4),
        "reducersPerHour": round(reducers, 4),
        "reducerOverheadPercent": round(100 * reducers / training, 2) if training else None,
        "unpriced": unpriced,
        "spotPerHour": None if spot is None else round(spot, 4),
    }


@cache
def _common_regions(keys: tuple[tuple[str, str, int, str], ...]) -> frozenset[str]:
    """Regions that offer and price every one of these machines."""
    return frozenset.intersection(*(_regions(key) for key in keys)) if keys else frozenset()


def _cheapest_region(items: list[Item], home: dict[str, Any]) -> dict[str, Any] | None:
    """The cheapest region for the whole cluster on demand, with its Spot figure; None if none.

    ``home`` is the us-central1 cost, reused when that is the only region to compare.
    """
    regions = _common_regions(tuple(key for _, _, _, key in items))
    if not regions:
        return None
    if regions == {HOME}:
        totals = {HOME: home["jobPerHour"]}
    else:
        totals = {region: _total(items, region, spot=False) or 0.0 for region in sorted(regions)}
    best = min(totals, key=lambda region: (totals[region], region))
    note = (
        f"only {best} has a price for every pool in the catalog; other regions are not compared"
        if len(totals) == 1
        else f"compared {len(totals)} regions that offer every pool and price it"
    )
    return {
        "region": best,
        "perHour": totals[best],
        "spotPerHour": home["spotPerHour"] if best == HOME else _total(items, best, spot=True),
        "regionsCompared": sorted(totals),
        "note": note,
    }


def cluster_cost(pools: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-pool and total $/hour in us-central1, the Spot figure there and the cheapest region."""
    items = _items(pools)
    cost = _job_cost(items)
    cost["cheapestRegion"] = _cheapest_region(items, cost)
    return cost
