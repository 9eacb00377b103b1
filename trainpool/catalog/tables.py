"""The catalog's CSV files, read once into typed rows."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from trainpool.catalog.csvdata import flag as _flag
from trainpool.catalog.csvdata import number as _num
from trainpool.catalog.csvdata import read_rows as _rows


@dataclass(frozen=True)
class FixedGpu:
    """A machine type that comes with its GPUs (a2-*, a3-*, a4-*, g2-*, g4-*)."""

    machine_type: str
    accelerator_type: str
    accelerator_count: int
    egress_gbps: float
    gpudirect: bool
    source: str
    verified: bool


@dataclass(frozen=True)
class Machine:
    """A machine type Vertex custom training supports."""

    name: str
    series: str
    vcpus: int
    memory_gb: float
    egress_gbps: float
    tier1_egress_gbps: float | None
    price_usd_per_hour: float | None
    source: str
    verified: bool
    fixed_gpu: FixedGpu | None = None


@dataclass(frozen=True)
class Accelerator:
    """A GPU type: its Vertex enum number, how it attaches (``n1`` or ``fixed``), its price."""

    name: str
    enum_value: int
    attach: str
    price_usd_per_gpu_hour: float | None
    source: str
    verified: bool


@dataclass(frozen=True)
class Egress:
    """A VM's maximum egress in Gbps, with where the figure comes from."""

    gbps: float
    source: str
    verified: bool


@cache
def machines() -> dict[str, Machine]:
    """Every machine type by name: general-purpose rows, then fixed-GPU rows."""
    out = {}
    for row in _rows("machines.csv"):
        out[row["machine_type"]] = Machine(
            name=row["machine_type"],
            series=row["series"],
            vcpus=int(row["vcpus"]),
            memory_gb=float(row["memory_gb"]),
            egress_gbps=float(row["egress_gbps"]),
            tier1_egress_gbps=_num(row["tier1_egress_gbps"]),
            price_usd_per_hour=_num(row["price_usd_per_hour"]),
            source=row["source"],
            verified=_flag(row["verified"]),
        )
    for row in _rows("fixed_gpu_machines.csv"):
        gpu = FixedGpu(
            machine_type=row["machine_type"],
            accelerator_type=row["accelerator_type"],
            accelerator_count=int(row["accelerator_count"]),
            egress_gbps=float(row["egress_gbps"]),
            gpudirect=_flag(row["gpudirect"]),
            source=row["source"],
            verified=_flag(row["verified"]),
        )
        out[gpu.machine_type] = Machine(
            name=gpu.machine_type,
            series=gpu.machine_type.split("-")[0],
            vcpus=int(row["vcpus"]),
            memory_gb=float(row["memory_gb"]),
            egress_gbps=gpu.egress_gbps,
            tier1_egress_gbps=None,
            price_usd_per_hour=_num(row["price_usd_per_hour"]),
            source=gpu.source,
            verified=gpu.verified,
            fixed_gpu=gpu,
        )
    return out


@cache
def accelerators() -> dict[str, Accelerator]:
    """Every GPU type by its Vertex enum name."""
    return {
        row["accelerator_type"]: Accelerator(
            name=row["accelerator_type"],
            enum_value=int(row["enum_value"]),
            attach=row["attach"],
            price_usd_per_gpu_hour=_num(row["price_usd_per_gpu_hour"]),
            source=row["source"],
            verified=_flag(row["verified"]),
        )
        for row in _rows("accelerators.csv")
    }


@cache
def n1_matrix() -> dict[tuple[str, str], tuple[int, ...]]:
    """(N1 machine, GPU) → the GPU counts Vertex allows."""
    return {
        (row["machine_type"], row["accelerator_type"]): tuple(
            int(n) for n in row["allowed_counts"].split()
        )
        for row in _rows("n1_accelerators.csv")
    }


@cache
def n1_gpu_egress() -> dict[tuple[str, str, int], Egress]:
    """(machine or ``*``, GPU, count) → egress of an N1 VM with those GPUs."""
    return {
        (row["machine_type"], row["accelerator_type"], int(row["accelerator_count"])): Egress(
            float(row["egress_gbps"]), row["source"], _flag(row["verified"])
        )
        for row in _rows("n1_gpu_egress.csv")
    }
