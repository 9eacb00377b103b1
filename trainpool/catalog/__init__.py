"""Machine types, TPUs, accelerators, regions, egress, prices and Vertex's prebuilt training
containers, as CSV data with sources.

The data lives in ``trainpool/catalog/data/*.csv``; every row has a ``source`` and a
``verified`` flag. Prices are Compute Engine (and Cloud TPU) list prices, on demand and on Spot,
per region where a source gave them. ``python3 -m trainpool.catalog.refresh`` rebuilds the
generated files from the saved pages in ``trainpool/catalog/refresh/pages``. The packages
each prebuilt image ships are in :mod:`trainpool.catalog.included`, a package of its own with
its own data, which the components never import: so an edit of that table does not change
the components image.
"""

from trainpool.catalog.locations import nearest_first, regions_of, vertex_regions
from trainpool.catalog.prebuilt import (
    PrebuiltImage,
    closest_prebuilt,
    is_google_training_image,
    prebuilt_image,
    prebuilt_images,
)
from trainpool.catalog.prices import hourly, priced_regions
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
    refusal,
    vm_egress,
    vm_egress_gbps,
)
from trainpool.catalog.tables import Accelerator, Egress, FixedGpu, Machine, accelerators, machines
from trainpool.catalog.tpus import TpuShape, tpu_shape, tpu_shapes

__all__ = [
    "Accelerator",
    "Egress",
    "FixedGpu",
    "Machine",
    "PrebuiltImage",
    "TpuShape",
    "UnknownName",
    "accelerator",
    "accelerator_by_enum",
    "accelerator_price",
    "accelerators",
    "allowed_counts",
    "attachable",
    "closest_prebuilt",
    "fixed_gpu",
    "hourly",
    "is_google_training_image",
    "machine",
    "machine_price",
    "machines",
    "nearest_first",
    "prebuilt_image",
    "prebuilt_images",
    "priced_regions",
    "refusal",
    "regions_of",
    "tpu_shape",
    "tpu_shapes",
    "vertex_regions",
    "vm_egress",
    "vm_egress_gbps",
]
