"""Machine types, accelerators, compatibility, egress and prices, as CSV data with sources.

The data lives in ``trainpool/catalog/data/*.csv``; every row has a ``source`` and a
``verified`` flag. Prices are Compute Engine on-demand list prices in us-central1.
"""

from trainpool.catalog.query import (
    UnknownName,
    accelerator,
    accelerator_by_enum,
    accelerator_price,
    allowed_counts,
    attachable,
    fixed_gpu,
    machine,
    machine_price,
    vm_egress,
    vm_egress_gbps,
)
from trainpool.catalog.tables import Accelerator, Egress, FixedGpu, Machine, accelerators, machines

__all__ = [
    "Accelerator",
    "Egress",
    "FixedGpu",
    "Machine",
    "UnknownName",
    "accelerator",
    "accelerator_by_enum",
    "accelerator_price",
    "accelerators",
    "allowed_counts",
    "attachable",
    "fixed_gpu",
    "machine",
    "machine_price",
    "machines",
    "vm_egress",
    "vm_egress_gbps",
]
