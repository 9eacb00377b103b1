"""The location rule: a pool's machine (or TPU, or GPU) must be offered where the job runs."""

from __future__ import annotations

from functools import cache
from typing import Any

from trainpool import catalog
from trainpool.cluster_env.layout import is_reduction_server
from trainpool.plan.findings import Findings
from trainpool.plan.naming import Namer

SHOWN_REGIONS = 8


def region_key(machine: dict[str, Any]) -> tuple[str, str]:
    """(name in regions.csv, the machineSpec field that names it) for one pool's machine."""
    return _region_key(
        str(machine.get("machineType", "")), str(machine.get("acceleratorType") or "")
    )


@cache
def _region_key(name: str, accel: str) -> tuple[str, str]:
    shapes = catalog.tpu_shapes().get(name)
    if shapes and not shapes[0].topology:
        return f"{name}/{accel}", "machineSpec.acceleratorType"
    known = catalog.machines().get(name)
    if shapes or (known is not None and known.fixed_gpu is not None):
        return name, "machineSpec.machineType"
    return accel, "machineSpec.acceleratorType"


@cache
def _missing(name: str, accel: str, location: str) -> tuple[str, list[str]] | None:
    """(field, regions nearest first) when this machine is not offered in ``location``."""
    key, field = _region_key(name, accel)
    regions = catalog.regions_of(key)
    if regions is None or location in regions:
        return None
    return field, catalog.nearest_first(regions, location)


def check_location(
    pools: list[dict[str, Any]], location: str, names: Namer, found: Findings
) -> None:
    """Refuse a pool whose machine type or accelerator is not offered in ``location``.

    Names without region data in the catalog (N1-attached GPUs, L4, ...) are not checked.
    """
    for index, pool in enumerate(pools[:4]):
        machine = pool.get("machineSpec") if pool else None
        if not isinstance(machine, dict):
            continue
        name = str(machine.get("machineType", ""))
        accel = str(machine.get("acceleratorType") or "")
        missing = _missing(name, accel, location)
        if missing is None or (index == 2 and is_reduction_server(pool)):
            continue
        field, nearest = missing
        shown = ", ".join(nearest[:SHOWN_REGIONS]) + (
            f" (+{len(nearest) - SHOWN_REGIONS} more: `trainpool catalog --accelerator "
            f"{_carried(name, accel)}`)"
            if len(nearest) > SHOWN_REGIONS
            else ""
        )
        value = accel if field.endswith("acceleratorType") else name
        found.error(
            names.pool(index, field),
            f"{value!r} is not offered in {location}; accepted: a location that has it, "
            f"nearest first: {shown}",
        )


def _carried(name: str, accel: str) -> str:
    """The accelerator a machine carries, for the `trainpool catalog --accelerator` hint."""
    known = catalog.machines().get(name)
    if known is not None and known.fixed_gpu is not None:
        return known.fixed_gpu.accelerator_type
    shapes = catalog.tpu_shapes().get(name)
    return accel or (shapes[0].accelerator_type if shapes else "")
