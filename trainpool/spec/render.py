"""A ClusterRequest rendered as a Vertex CustomJobSpec in REST JSON, field for field.

Rendering adds nothing the request does not say: the planner fills in fixed-GPU
accelerators, the reducer image and the reducer count afterwards.
"""

from __future__ import annotations

from typing import Any

from trainpool.spec.request import ClusterRequest, Pool, ReducerPool

ROLES = ("primary", "workers", "pool2", "evaluators")
"""Pool index → request key; pool 2 is ``parameter_servers`` or ``reduction_server``."""


def _env(env: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in env.items()]


def _runtime(pool: Pool, request: ClusterRequest) -> dict[str, Any]:
    """containerSpec or pythonPackageSpec of a training pool (pool values override defaults)."""
    out: dict[str, Any] = {}
    command = pool.command if pool.command is not None else request.command
    args = pool.args if pool.args is not None else request.args
    env = pool.env if pool.env is not None else request.env
    image = (
        pool.image_uri
        if pool.image_uri is not None
        else (None if pool.python_package else request.image_uri)
    )
    if image is not None or (pool.python_package is None and (command or args or env)):
        container: dict[str, Any] = {"imageUri": image} if image is not None else {}
        if command:
            container["command"] = list(command)
        if args and pool.python_package is None:
            container["args"] = list(args)
        if env and pool.python_package is None:
            container["env"] = _env(env)
        out["containerSpec"] = container
    elif pool.python_package is not None and pool.command:
        out["containerSpec"] = {"command": list(pool.command)}  # kept so the pool rules refuse it
    if pool.python_package is not None:
        package: dict[str, Any] = {
            "executorImageUri": pool.python_package.executor_image_uri,
            "packageUris": list(pool.python_package.package_uris),
            "pythonModule": pool.python_package.python_module,
        }
        if args:
            package["args"] = list(args)
        if env:
            package["env"] = _env(env)
        out["pythonPackageSpec"] = package
    return out


def render_pool(pool: Pool | ReducerPool, request: ClusterRequest) -> dict[str, Any]:
    """One WorkerPoolSpec in REST JSON."""
    machine: dict[str, Any] = {}
    if pool.machine_type is not None:
        machine["machineType"] = pool.machine_type
    if pool.accelerator_type is not None:
        machine["acceleratorType"] = pool.accelerator_type
    if pool.accelerator_count is not None:
        machine["acceleratorCount"] = pool.accelerator_count
    if pool.tpu_topology is not None:
        machine["tpuTopology"] = pool.tpu_topology
    spec: dict[str, Any] = {"machineSpec": machine}
    if pool.replica_count is not None:
        spec["replicaCount"] = pool.replica_count
    if isinstance(pool, Pool):
        spec.update(_runtime(pool, request))
    disk: dict[str, Any] = {}
    if pool.boot_disk_type is not None:
        disk["bootDiskType"] = pool.boot_disk_type
    if pool.boot_disk_size_gb is not None:
        disk["bootDiskSizeGb"] = pool.boot_disk_size_gb
    if disk:
        spec["diskSpec"] = disk
    return spec


def _scheduling(request: ClusterRequest) -> dict[str, Any]:
    scheduling: dict[str, Any] = {}
    if request.timeout is not None:
        scheduling["timeout"] = request.timeout
    if request.restart_job_on_worker_restart:
        scheduling["restartJobOnWorkerRestart"] = True
    if request.scheduling_strategy is not None:
        scheduling["strategy"] = request.scheduling_strategy
    if request.max_wait_duration is not None:
        scheduling["maxWaitDuration"] = request.max_wait_duration
    return scheduling


def render_pools(request: ClusterRequest) -> list[dict[str, Any]]:
    """Pools in positional roles, ``{}`` for a skipped pool, trailing ``{}`` trimmed.

    With both parameter servers and a reduction server (an error the planner
    names), pool 2 holds the parameter servers.
    """
    pool2 = request.parameter_servers or request.reduction_server
    pools = [request.primary, request.workers, pool2, request.evaluators]
    rendered = [render_pool(pool, request) if pool is not None else {} for pool in pools]
    while rendered and rendered[-1] == {}:
        rendered.pop()
    return rendered


def render_job_spec(request: ClusterRequest) -> dict[str, Any]:
    """The CustomJobSpec in REST JSON (camelCase; only the fields the request sets)."""
    spec: dict[str, Any] = {"workerPoolSpecs": render_pools(request)}
    if request.base_output_directory is not None:
        spec["baseOutputDirectory"] = {"outputUriPrefix": request.base_output_directory}
    for field, key in (
        ("service_account", "serviceAccount"),
        ("network", "network"),
        ("tensorboard", "tensorboard"),
        ("persistent_resource_id", "persistentResourceId"),
    ):
        value = getattr(request, field)
        if value is not None:
            spec[key] = value
    if request.reserved_ip_ranges:
        spec["reservedIpRanges"] = list(request.reserved_ip_ranges)
    if request.enable_web_access:
        spec["enableWebAccess"] = True
    scheduling = _scheduling(request)
    if scheduling:
        spec["scheduling"] = scheduling
    return spec


def render_job_fields(request: ClusterRequest) -> dict[str, Any]:
    """The CustomJob fields that live outside its jobSpec: labels and encryptionSpec."""
    fields: dict[str, Any] = {}
    if request.labels:
        fields["labels"] = dict(request.labels)
    if request.encryption_key is not None:
        fields["encryptionSpec"] = {"kmsKeyName": request.encryption_key}
    return fields
