"""Questions asked of the catalog; an unknown name raises UnknownName with the closest names."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from functools import cache

from trainpool.catalog.csvdata import read_rows
from trainpool.catalog.prices import hourly
from trainpool.catalog.tables import (
    Accelerator,
    Egress,
    FixedGpu,
    Machine,
    accelerators,
    machines,
    n1_gpu_egress,
    n1_matrix,
)


class UnknownName(LookupError):
    """A machine or accelerator name the catalog does not know; ``suggestions`` are the closest."""

    def __init__(self, kind: str, name: str, known: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.suggestions = difflib.get_close_matches(name, list(known), n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"{name!r} is not a known {kind}; {hint or 'see `trainpool catalog`'}")


def machine(name: str) -> Machine:
    """The machine type ``name``."""
    found = machines().get(name)
    if found is None:
        raise UnknownName("machine type", name, machines())
    return found


def accelerator(name: str) -> Accelerator:
    """The accelerator type ``name`` (a Vertex enum name such as NVIDIA_TESLA_V100)."""
    found = accelerators().get(name)
    if found is None:
        raise UnknownName("accelerator type", name, accelerators())
    return found


def fixed_gpu(name: str) -> FixedGpu | None:
    """The GPUs that come with machine type ``name``, or None when it has none built in."""
    return machine(name).fixed_gpu


def allowed_counts(machine_type: str, accelerator_type: str) -> tuple[int, ...]:
    """GPU counts allowed for ``accelerator_type`` on ``machine_type`` (empty: not attachable)."""
    gpu = fixed_gpu(machine_type)
    accelerator(accelerator_type)
    if gpu is not None:
        return (gpu.accelerator_count,) if gpu.accelerator_type == accelerator_type else ()
    return n1_matrix().get((machine_type, accelerator_type), ())


def attachable(machine_type: str) -> dict[str, tuple[int, ...]]:
    """Every accelerator that may go on ``machine_type``, with its allowed counts."""
    gpu = fixed_gpu(machine_type)
    if gpu is not None:
        return {gpu.accelerator_type: (gpu.accelerator_count,)}
    return {acc: counts for (m, acc), counts in n1_matrix().items() if m == machine_type}


@cache
def vm_egress(machine_type: str, accelerator_type: str | None = None, count: int = 0) -> Egress:
    """Maximum egress of one VM, GPUs included, with its source and verified flag.

    Only V100 and T4 raise an N1 VM's egress (``n1_gpu_egress.csv``); with P100 or P4
    an N1 VM keeps its plain figure (vertex-facts D.2: 32 Gbps max, same as plain N1).
    """
    found = machine(machine_type)
    if found.fixed_gpu is not None or not accelerator_type or count <= 0:
        return Egress(found.egress_gbps, found.source, found.verified)
    table = n1_gpu_egress()
    row = table.get((machine_type, accelerator_type, count)) or table.get(
        ("*", accelerator_type, count)
    )
    if row is None or row.gbps <= found.egress_gbps:
        return Egress(found.egress_gbps, found.source, found.verified)
    return row


def vm_egress_gbps(machine_type: str, accelerator_type: str | None = None, count: int = 0) -> float:
    """Maximum egress of one VM in Gbps (see ``vm_egress`` for the source)."""
    return vm_egress(machine_type, accelerator_type, count).gbps


def accelerator_price(accelerator_type: str) -> float | None:
    """On-demand $/GPU-hour in us-central1, or None when no price was found."""
    accelerator(accelerator_type)
    return hourly(accelerator_type)


def machine_price(machine_type: str) -> float | None:
    """On-demand $/hour of the VM in us-central1 (fixed-GPU types include their GPUs), or None."""
    machine(machine_type)
    return hourly(machine_type)


@cache
def _refused() -> dict[str, str]:
    return {row["name"]: row["reason"] for row in read_rows("unsupported_machines.csv")}


def refusal(machine_type: str) -> str | None:
    """Why Vertex training refuses a Compute Engine machine type, or None when it is not listed.

    A listed name ending in ``*`` covers the whole series (``n2d-*``).
    """
    refused = _refused()
    if machine_type in refused:
        return refused[machine_type]
    series = machine_type.split("-", 1)[0] + "-*"
    return refused.get(series)


def accelerator_by_enum(number: int) -> str:
    """The accelerator name of a Vertex AcceleratorType enum number."""
    for acc in accelerators().values():
        if acc.enum_value == number:
            return acc.name
    raise UnknownName("accelerator enum number", str(number), [])
