"""Catalog rows for listing (``trainpool catalog``): filtered, as plain dicts, as a text table."""

from __future__ import annotations

from typing import Any

from trainpool.catalog.prices import hourly
from trainpool.catalog.tables import accelerators, machines
from trainpool.catalog.tpus import tpu_shapes


def machine_rows(
    *, name: str = "", gpu_only: bool = False, min_gbps: float = 0.0
) -> list[dict[str, Any]]:
    """Machine types whose name contains ``name``, optionally only fixed-GPU ones, by egress."""
    rows = []
    for machine in machines().values():
        if name not in machine.name or machine.egress_gbps < min_gbps:
            continue
        if gpu_only and machine.fixed_gpu is None:
            continue
        gpus = machine.fixed_gpu
        rows.append(
            {
                "machine_type": machine.name,
                "vcpus": machine.vcpus,
                "memory_gb": machine.memory_gb,
                "gpus": f"{gpus.accelerator_count} x {gpus.accelerator_type}" if gpus else "",
                "egress_gbps": machine.egress_gbps,
                "usd_per_hour": hourly(machine.name),
                "spot_usd_per_hour": hourly(machine.name, spot=True),
                "verified": machine.verified,
            }
        )
    return rows


def tpu_rows(*, name: str = "") -> list[dict[str, Any]]:
    """TPU machine types whose name contains ``name``, one row per allowed topology."""
    return [
        {
            "machine_type": shape.machine_type,
            "tpu": shape.version,
            "tpu_topology": shape.topology or "-",
            "accelerator": shape.accelerator_type or "-",
            "chips": shape.chips,
            "vms": shape.vms,
            "usd_per_vm_hour": hourly(shape.machine_type),
            "verified": shape.verified,
        }
        for shapes in tpu_shapes().values()
        for shape in shapes
        if name in shape.machine_type
    ]


def accelerator_rows(*, name: str = "") -> list[dict[str, Any]]:
    """Accelerator types whose name contains ``name``."""
    return [
        {
            "accelerator_type": acc.name,
            "attach": {"n1": "N1 machines", "tpu": "TPU machine types"}.get(
                acc.attach, "built into its machine types"
            ),
            "usd_per_gpu_hour": hourly(acc.name),
            "verified": acc.verified,
        }
        for acc in accelerators().values()
        if name.upper() in acc.name
    ]


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def table(rows: list[dict[str, Any]]) -> str:
    """Rows as an aligned text table (empty string for no rows)."""
    if not rows:
        return ""
    headers = list(rows[0])
    cells = [[_cell(row[h]) for h in headers] for row in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)
