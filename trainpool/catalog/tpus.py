"""Cloud TPU machine types of Vertex training: chips, and the topologies each type allows."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from trainpool.catalog.csvdata import flag, read_rows


@dataclass(frozen=True)
class TpuShape:
    """One allowed (machine type, topology): a TPU slice of ``chips`` chips on ``vms`` VMs.

    ``topology`` is "" for cloud-tpu (v2, v3), which takes acceleratorType and
    acceleratorCount instead; ``accelerator_type`` is "" where Vertex has no enum (v6e).
    """

    machine_type: str
    version: str
    accelerator_type: str
    chips_per_vm: int
    vcpus: int
    memory_gb: float
    topology: str
    chips: int
    vms: int
    source: str
    verified: bool

    @property
    def region_key(self) -> str:
        """The name ``regions.csv`` uses: the machine type, or cloud-tpu/ENUM for v2 and v3."""
        return (
            f"{self.machine_type}/{self.accelerator_type}"
            if not self.topology
            else self.machine_type
        )


@cache
def tpu_shapes() -> dict[str, tuple[TpuShape, ...]]:
    """TPU machine type → its allowed shapes, in the order of the page."""
    out: dict[str, list[TpuShape]] = {}
    for row in read_rows("tpu_machines.csv"):
        shape = TpuShape(
            machine_type=row["machine_type"],
            version=row["version"],
            accelerator_type=row["accelerator_type"],
            chips_per_vm=int(row["chips_per_vm"]),
            vcpus=int(row["vcpus"]),
            memory_gb=float(row["memory_gb"]),
            topology=row["topology"],
            chips=int(row["chips"]),
            vms=int(row["vms"]),
            source=row["source"],
            verified=flag(row["verified"]),
        )
        out.setdefault(shape.machine_type, []).append(shape)
    return {name: tuple(shapes) for name, shapes in out.items()}


def tpu_shape(machine_type: str, topology: str, accelerator_type: str = "") -> TpuShape | None:
    """The shape of a TPU pool, or None when the type does not allow that topology/accelerator."""
    for shape in tpu_shapes().get(machine_type, ()):
        if shape.topology == topology and (
            shape.topology or shape.accelerator_type == accelerator_type
        ):
            return shape
    return None
