"""The field names of a Vertex CustomJobSpec in REST JSON (google.cloud.aiplatform.v1).

A nested dict is a message whose keys are checked; ``None`` is a field whose
content is passed through unchecked.
"""

from __future__ import annotations

from typing import Any

_ENV = {"name": None, "value": None}

WORKER_POOL_SPEC: dict[str, Any] = {
    "containerSpec": {"imageUri": None, "command": None, "args": None, "env": _ENV},
    "pythonPackageSpec": {
        "executorImageUri": None,
        "packageUris": None,
        "pythonModule": None,
        "args": None,
        "env": _ENV,
    },
    "machineSpec": {
        "machineType": None,
        "acceleratorType": None,
        "acceleratorCount": None,
        "gpuPartitionSize": None,
        "tpuTopology": None,
        "reservationAffinity": None,
    },
    "replicaCount": None,
    "nfsMounts": None,
    "lustreMounts": None,
    "diskSpec": {"bootDiskType": None, "bootDiskSizeGb": None},
}

CUSTOM_JOB_SPEC: dict[str, Any] = {
    "persistentResourceId": None,
    "workerPoolSpecs": WORKER_POOL_SPEC,
    "scheduling": {
        "timeout": None,
        "restartJobOnWorkerRestart": None,
        "strategy": None,
        "disableRetries": None,
        "maxWaitDuration": None,
    },
    "serviceAccount": None,
    "network": None,
    "reservedIpRanges": None,
    "pscInterfaceConfig": None,
    "baseOutputDirectory": {"outputUriPrefix": None},
    "protectedArtifactLocationId": None,
    "tensorboard": None,
    "enableWebAccess": None,
    "enableDashboardAccess": None,
    "experiment": None,
    "experimentRun": None,
    "models": None,
}


def unknown_keys(obj: Any, schema: dict[str, Any], path: str = "") -> list[tuple[str, list[str]]]:
    """``(path of the unknown key, accepted keys)`` for every key ``schema`` does not know."""
    found: list[tuple[str, list[str]]] = []
    items = enumerate(obj) if isinstance(obj, list) else [(None, obj)]
    for index, item in items:
        where = f"{path}[{index}]" if index is not None else path
        if not isinstance(item, dict):
            continue
        for key, value in item.items():
            field = f"{where}.{key}" if where else key
            if key not in schema:
                found.append((field, sorted(schema)))
            elif isinstance(schema[key], dict) and value is not None:
                found.extend(unknown_keys(value, schema[key], field))
    return found
