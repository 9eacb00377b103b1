"""Rules of one pool's machine: known type, attachable accelerators, allowed counts."""

from __future__ import annotations

from typing import Any

from trainpool import catalog
from trainpool.plan.findings import Findings, is_whole, show
from trainpool.plan.naming import Namer


def _suggest(err: catalog.UnknownName) -> str:
    if err.suggestions:
        return f"did you mean {', '.join(err.suggestions)}? (all: `trainpool catalog`)"
    return "see `trainpool catalog`"


def gpu_count(machine: dict[str, Any]) -> int:
    """GPUs per replica of a machineSpec (fixed-GPU types count their built-in GPUs)."""
    count = machine.get("acceleratorCount")
    if is_whole(count) and count > 0:
        return int(count)
    try:
        gpu = catalog.fixed_gpu(str(machine.get("machineType", "")))
    except catalog.UnknownName:
        return 0
    return gpu.accelerator_count if gpu is not None else 0


def check_machine(
    index: int, machine: Any, names: Namer, found: Findings, *, cpu_only: bool = False
) -> None:
    """Machine type known; accelerators known, attachable, count allowed (unless ``cpu_only``)."""
    if not isinstance(machine, dict) or "machineType" not in machine:
        found.error(
            names.pool(index, "machineSpec.machineType"),
            "missing; accepted: a machine type such as n1-standard-8 (see `trainpool catalog`)",
        )
        return
    name = machine["machineType"]
    try:
        known = catalog.machine(str(name))
    except catalog.UnknownName as err:
        found.error(
            names.pool(index, "machineSpec.machineType"),
            f"{show(name)} is not a machine type Vertex training supports; {_suggest(err)}",
        )
        return
    if cpu_only:
        return
    accel = machine.get("acceleratorType")
    count = machine.get("acceleratorCount")
    count_field = names.pool(index, "machineSpec.acceleratorCount")
    type_field = names.pool(index, "machineSpec.acceleratorType")
    if count is not None and (not is_whole(count) or count < 1):
        found.error(count_field, f"{show(count)} is not accepted; accepted: a whole number >= 1")
        return
    if accel is None:
        if count is not None and known.fixed_gpu is None:
            found.error(
                type_field,
                f"missing for accelerator_count {count} on {name}; accepted: "
                + _attachable_text(name),
            )
        elif count is not None and known.fixed_gpu is not None:
            _check_fixed(
                known.fixed_gpu,
                known.fixed_gpu.accelerator_type,
                count,
                type_field,
                count_field,
                found,
            )
        return
    try:
        catalog.accelerator(str(accel))
    except catalog.UnknownName as err:
        found.error(type_field, f"{show(accel)} is not a known accelerator type; {_suggest(err)}")
        return
    if known.fixed_gpu is not None:
        _check_fixed(known.fixed_gpu, str(accel), count, type_field, count_field, found)
        return
    counts = catalog.allowed_counts(name, str(accel))
    if not counts:
        found.error(
            type_field,
            f"{accel} is not attachable to {name}; accepted on {name}: " + _attachable_text(name),
        )
    elif count is None:
        found.error(
            count_field,
            f"missing for {accel} on {name}; accepted: {', '.join(map(str, counts))}",
        )
    elif count not in counts:
        found.error(
            count_field,
            f"{count} {accel} is not allowed on {name}; accepted: {', '.join(map(str, counts))}",
        )


def _attachable_text(machine_type: str) -> str:
    options = catalog.attachable(machine_type)
    if not options:
        return (
            "no accelerators (CPU-only machine type); GPUs go on n1-* machines or come "
            "with a2-*, a3-*, a4-*, g2-*, g4-* types"
        )
    return "; ".join(f"{acc} x {', '.join(map(str, n))}" for acc, n in sorted(options.items()))


def _check_fixed(
    gpu: catalog.FixedGpu,
    accel: str,
    count: Any,
    type_field: str,
    count_field: str,
    found: Findings,
) -> None:
    if accel != gpu.accelerator_type:
        found.error(
            type_field,
            f"{accel} does not match {gpu.machine_type}, which comes with "
            f"{gpu.accelerator_count} x {gpu.accelerator_type}; accepted: "
            f"{gpu.accelerator_type} (or leave it out)",
        )
    elif count is not None and count != gpu.accelerator_count:
        found.error(
            count_field,
            f"{count} does not match {gpu.machine_type}, which comes with "
            f"{gpu.accelerator_count} x {gpu.accelerator_type}; accepted: "
            f"{gpu.accelerator_count} (or leave it out)",
        )
