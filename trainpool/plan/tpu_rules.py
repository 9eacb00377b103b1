"""Rules of a Cloud TPU pool: the primary pool alone, a topology Vertex allows, its accelerator."""

from __future__ import annotations

from typing import Any

from trainpool import catalog
from trainpool.plan.findings import Findings, show
from trainpool.plan.naming import Namer


def check_tpu(
    index: int,
    machine: dict[str, Any],
    shapes: tuple[catalog.TpuShape, ...],
    names: Namer,
    found: Findings,
) -> None:
    """A TPU machine type: pool 0 only; cloud-tpu takes 8 TPU_V2/TPU_V3, ct* types a topology."""
    name = machine["machineType"]
    if index != 0:
        found.error(
            names.pool(index, "machineSpec.machineType"),
            f"{show(name)} in a pool other than the primary; accepted: a TPU machine type in the "
            "primary pool only (Vertex runs a TPU job as one pool of one replica; the topology "
            "sets how many VMs)",
        )
        return
    if not shapes[0].topology:
        _check_cloud_tpu(index, machine, shapes, names, found)
        return
    topology = machine.get("tpuTopology")
    allowed = ", ".join(shape.topology for shape in shapes)
    topology_field = names.pool(index, "machineSpec.tpuTopology")
    if topology is None:
        found.error(topology_field, f"missing for {name}; accepted: {allowed}")
    elif topology not in {shape.topology for shape in shapes}:
        found.error(
            topology_field,
            f"{show(topology)} is not a topology Vertex allows for {name}; accepted: {allowed}",
        )
    expected = shapes[0].accelerator_type
    accel = machine.get("acceleratorType")
    if accel is not None and accel != expected:
        found.error(
            names.pool(index, "machineSpec.acceleratorType"),
            f"{show(accel)} does not match {name} (TPU {shapes[0].version}); accepted: "
            + (f"{expected} (or leave it out)" if expected else "leave it out"),
        )
    count = machine.get("acceleratorCount")
    if count is not None and count != shapes[0].chips_per_vm:
        found.error(
            names.pool(index, "machineSpec.acceleratorCount"),
            f"{show(count)} does not match {name}, which has {shapes[0].chips_per_vm} chips per "
            f"VM; accepted: {shapes[0].chips_per_vm} (or leave it out: the topology sets the "
            "slice)",
        )


def _check_cloud_tpu(
    index: int,
    machine: dict[str, Any],
    shapes: tuple[catalog.TpuShape, ...],
    names: Namer,
    found: Findings,
) -> None:
    by_type = {shape.accelerator_type: shape for shape in shapes}
    accel = machine.get("acceleratorType")
    if machine.get("tpuTopology") is not None:
        found.error(
            names.pool(index, "machineSpec.tpuTopology"),
            f"{show(machine['tpuTopology'])} is not used with cloud-tpu; accepted: no tpu_topology "
            f"(cloud-tpu takes accelerator_type {' or '.join(by_type)} and accelerator_count 8)",
        )
    shape = by_type.get(str(accel))
    if shape is None:
        found.error(
            names.pool(index, "machineSpec.acceleratorType"),
            f"{show(accel) if accel else 'missing'} on cloud-tpu; accepted: {', '.join(by_type)}",
        )
        return
    count = machine.get("acceleratorCount")
    if count != shape.chips:
        found.error(
            names.pool(index, "machineSpec.acceleratorCount"),
            f"{show(count) if count is not None else 'missing'} {accel} on cloud-tpu; "
            f"accepted: {shape.chips}",
        )


def check_tpu_cluster(pools: list[dict[str, Any]], names: Namer, found: Findings) -> None:
    """A TPU primary runs alone: every other pool must be skipped."""
    machine = (pools[0] or {}).get("machineSpec") if pools else None
    if not isinstance(machine, dict) or str(machine.get("machineType")) not in catalog.tpu_shapes():
        return
    for index, pool in enumerate(pools[1:4], start=1):
        if pool:
            found.error(
                names.pool(index),
                f"given beside a TPU primary ({machine['machineType']}); accepted: no other pools "
                "(Vertex runs a TPU job as one worker pool; scale it with tpu_topology)",
            )
