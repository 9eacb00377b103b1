"""Where an accelerator can be had: machine types that carry it, their regions and prices."""

from __future__ import annotations

from typing import Any

from trainpool.catalog.locations import nearest_first, regions_of
from trainpool.catalog.prices import hourly
from trainpool.catalog.query import accelerator
from trainpool.catalog.tables import machines, n1_matrix
from trainpool.catalog.tpus import tpu_shapes


def carriers(accelerator_type: str, count: int = 0) -> list[tuple[str, str, int]]:
    """(machine type, name in regions.csv, accelerators per VM) for every type carrying it.

    ``count`` > 0 keeps only types with exactly that many per VM.
    """
    accelerator(accelerator_type)
    found = [
        (m.name, m.name, m.fixed_gpu.accelerator_count)
        for m in machines().values()
        if m.fixed_gpu is not None and m.fixed_gpu.accelerator_type == accelerator_type
    ]
    found += [
        (machine, accelerator_type, n)
        for (machine, acc), counts in n1_matrix().items()
        if acc == accelerator_type
        for n in counts
    ]
    found += [
        (
            name,
            f"{name}/{accelerator_type}" if not shapes[0].topology else name,
            shapes[0].chips_per_vm,
        )
        for name, shapes in tpu_shapes().items()
        if any(shape.accelerator_type == accelerator_type for shape in shapes)
    ]
    return [row for row in found if count <= 0 or row[2] == count]


def _price(
    machine_type: str, accelerator_type: str, per_vm: int, region: str, spot: bool
) -> float | None:
    price = hourly(machine_type, region, spot=spot)
    fixed = machines().get(machine_type)
    if price is None or fixed is None or fixed.fixed_gpu is not None:
        return price
    gpu = hourly(accelerator_type, region, spot=spot)
    return None if gpu is None else price + gpu * per_vm


def where_rows(
    accelerator_type: str, count: int = 0, location: str = "us-central1"
) -> list[dict[str, Any]]:
    """One row per (machine type, region), regions nearest to ``location`` first."""
    rows = []
    for machine_type, key, per_vm in carriers(accelerator_type, count):
        regions = regions_of(key)
        for region in nearest_first(regions, location) if regions is not None else [None]:
            priced_in = region or "us-central1"
            rows.append(
                {
                    "machine_type": machine_type,
                    "accelerators": f"{per_vm} x {accelerator_type}",
                    "region": region or "(no region data)",
                    "usd_per_hour": _price(
                        machine_type, accelerator_type, per_vm, priced_in, False
                    ),
                    "spot_usd_per_hour": _price(
                        machine_type, accelerator_type, per_vm, priced_in, True
                    ),
                }
            )
    return rows
