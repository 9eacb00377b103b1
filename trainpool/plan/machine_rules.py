"""Rules of one pool's machine: known type, attachable accelerators, allowed counts."""

from __future__ import annotations

from typing import Any

from trainpool import catalog
from trainpool.plan.findings import Findings, is_whole, show
from trainpool.plan.naming import Namer
from trainpool.plan.tpu_rules import check_tpu

ESCAPE_HATCH = "allow_unknown_machine_types"


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
    index: int,
    machine: Any,
    names: Namer,
    found: Findings,
    *,
    cpu_only: bool = False,
    allow_unknown: bool = False,
) -> None:
    """Machine type known; accelerators known, attachable, count allowed (unless ``cpu_only``).

    A machine type the catalog does not know is an error, or with ``allow_unknown`` a warning
    (only its accelerator type is checked then); a type Vertex is known to refuse stays an error.
    """
    if not isinstance(machine, dict) or "machineType" not in machine:
        found.error(
            names.pool(index, "machineSpec.machineType"),
            "missing; accepted: a machine type such as n1-standard-8 (see `trainpool catalog`)",
        )
        return
    name = machine["machineType"]
    shapes = catalog.tpu_shapes().get(str(name))
    if shapes is not None and not cpu_only:
        check_tpu(index, machine, shapes, names, found)
        return
    try:
        known = catalog.machine(str(name))
    except catalog.UnknownName as err:
        _unknown(index, machine, err, names, found, allow_unknown=allow_unknown)
        return
    if machine.get("tpuTopology") is not None:
        found.error(
            names.pool(index, "machineSpec.tpuTopology"),
            f"{show(machine['tpuTopology'])} on {name}; accepted: only with a TPU machine type "
            "(ct5lp-hightpu-*, ct6e-standard-*)",
        )
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


def _unknown(
    index: int,
    machine: dict[str, Any],
    err: catalog.UnknownName,
    names: Namer,
    found: Findings,
    *,
    allow_unknown: bool,
) -> None:
    field = names.pool(index, "machineSpec.machineType")
    name = show(machine["machineType"])
    reason = catalog.refusal(str(machine["machineType"]))
    if reason is not None:
        found.error(field, f"{name} is not accepted by Vertex training: {reason}; {_suggest(err)}")
    elif not allow_unknown:
        found.error(
            field,
            f"{name} is not a machine type Vertex training supports; {_suggest(err)}; or set "
            f"{ESCAPE_HATCH} if Vertex has it and the catalog does not yet",
        )
        return
    else:
        found.warn(
            field,
            f"{name} is not in the catalog; accepted because {ESCAPE_HATCH} is set: Vertex "
            "decides, and the plan checks no accelerator counts, egress or price for it",
        )
    accel = machine.get("acceleratorType")
    if accel is not None and reason is None:
        try:
            catalog.accelerator(str(accel))
        except catalog.UnknownName as bad:
            found.error(
                names.pool(index, "machineSpec.acceleratorType"),
                f"{show(accel)} is not a known accelerator type; {_suggest(bad)}",
            )


def _attachable_text(machine_type: str) -> str:
    options = catalog.attachable(machine_type)
    if not options:
        return (
            "no accelerators (CPU-only machine type); GPUs go on n1-* machines or come "
            "with a2-*, a3-*, a4-*, g2-*, g4-* types; TPUs come with ct5lp-*, ct6e-*, cloud-tpu"
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
