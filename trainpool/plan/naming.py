"""Field paths in errors: the request's own names, or the REST spec's.

The rules see only the REST spec; a namer turns a REST path into the name
the user wrote, so one rule gives ``workers.accelerator_count`` for a request and
``workerPoolSpecs[1].machineSpec.acceleratorCount`` for a spec.
"""

from __future__ import annotations

from dataclasses import dataclass

_POOL_FIELDS = {
    "": "",
    "replicaCount": "replica_count",
    "machineSpec.machineType": "machine_type",
    "machineSpec.acceleratorType": "accelerator_type",
    "machineSpec.acceleratorCount": "accelerator_count",
    "machineSpec.tpuTopology": "tpu_topology",
    "diskSpec.bootDiskType": "boot_disk_type",
    "diskSpec.bootDiskSizeGb": "boot_disk_size_gb",
    "containerSpec": "image_uri",
    "containerSpec.imageUri": "image_uri",
    "containerSpec.env": "env",
    "containerSpec.command": "command",
    "pythonPackageSpec": "python_package",
    "pythonPackageSpec.executorImageUri": "python_package.executor_image_uri",
    "pythonPackageSpec.packageUris": "python_package.package_uris",
    "pythonPackageSpec.pythonModule": "python_package.python_module",
    "pythonPackageSpec.env": "env",
}
_JOB_FIELDS = {
    "scheduling.timeout": "timeout",
    "scheduling.strategy": "scheduling_strategy",
    "scheduling.maxWaitDuration": "max_wait_duration",
    "baseOutputDirectory.outputUriPrefix": "base_output_directory",
    "workerPoolSpecs": "request",
}


class RestNamer:
    """Paths in a CustomJobSpec's REST JSON."""

    def pool(self, index: int, field: str = "") -> str:
        return f"workerPoolSpecs[{index}]" + (f".{field}" if field else "")

    def job(self, field: str) -> str:
        return field


@dataclass(frozen=True)
class RequestNamer:
    """Paths in a cluster request; ``pool2`` is ``reduction_server`` or ``parameter_servers``."""

    pool2: str = "parameter_servers"

    def pool(self, index: int, field: str = "") -> str:
        role = ("primary", "workers", self.pool2, "evaluators")[index]
        name = _POOL_FIELDS.get(field, field)
        return f"{role}.{name}" if name else role

    def job(self, field: str) -> str:
        return _JOB_FIELDS.get(field, field)


Namer = RestNamer | RequestNamer
