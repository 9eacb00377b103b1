"""Any CustomJobSpec dict → one canonical REST form, for validation.

Accepts camelCase REST JSON, snake_case ``CustomJobSpec.to_dict()`` (which writes
every default, enums as numbers and int64 as strings) and KFP Struct output
(whole floats). The result is camelCase, enum names, ints, no default values,
and a pool that held only defaults becomes ``{}``.
"""

from __future__ import annotations

from typing import Any

from trainpool.spec.keys import coerce_ints, to_rest

ACCELERATOR_ENUM = {
    0: "ACCELERATOR_TYPE_UNSPECIFIED",
    1: "NVIDIA_TESLA_K80",
    2: "NVIDIA_TESLA_P100",
    3: "NVIDIA_TESLA_V100",
    4: "NVIDIA_TESLA_P4",
    5: "NVIDIA_TESLA_T4",
    6: "TPU_V2",
    7: "TPU_V3",
    8: "NVIDIA_TESLA_A100",
    9: "NVIDIA_A100_80GB",
    10: "TPU_V4_POD",
    11: "NVIDIA_L4",
    12: "TPU_V5_LITEPOD",
    13: "NVIDIA_H100_80GB",
    14: "NVIDIA_H100_MEGA_80GB",
    15: "NVIDIA_H200_141GB",
    16: "NVIDIA_B200",
    17: "NVIDIA_GB200",
    18: "NVIDIA_RTX_PRO_6000",
}
"""google.cloud.aiplatform.v1.AcceleratorType numbers (proto ``to_dict()`` writes numbers)."""

STRATEGY_ENUM = {
    0: "STRATEGY_UNSPECIFIED",
    1: "ON_DEMAND",
    2: "LOW_COST",
    3: "STANDARD",
    4: "SPOT",
    6: "FLEX_START",
}
"""google.cloud.aiplatform.v1.Scheduling.Strategy numbers."""

_UNSET = ("", 0, "0", False, None, "ACCELERATOR_TYPE_UNSPECIFIED", "STRATEGY_UNSPECIFIED")
_INT64 = frozenset({"replicaCount"})
_USER_DATA = frozenset({"env", "labels", "args", "command", "packageUris"})
"""Fields whose values are the user's own data: kept verbatim ("0" and "" included)."""


def _enum(value: Any, names: dict[int, str]) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return names.get(value, value)
    return value


def _prune(obj: Any, key: str = "") -> Any:
    """Drop default values; keep list positions (a pool of defaults becomes ``{}``)."""
    if isinstance(obj, dict):
        out = {}
        for name, value in obj.items():
            if name == "acceleratorType":
                value = _enum(value, ACCELERATOR_ENUM)
            elif name == "strategy":
                value = _enum(value, STRATEGY_ENUM)
            elif name in _INT64 and isinstance(value, str) and value.isdigit():
                value = int(value)
            if name in _USER_DATA:
                if value:
                    out[name] = value
                continue
            value = _prune(value, name)
            if value in ({}, []) or (not isinstance(value, dict | list) and value in _UNSET):
                continue
            out[name] = value
        return out
    if isinstance(obj, list):
        if key == "workerPoolSpecs":
            return [_prune(pool) if isinstance(pool, dict) else pool for pool in obj]
        return [_prune(value) for value in obj]
    return obj


def normalize_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The canonical REST form of ``spec``; trailing ``{}`` pools trimmed."""
    out = _prune(to_rest(coerce_ints(spec)))
    pools = out.get("workerPoolSpecs")
    if isinstance(pools, list):
        while pools and pools[-1] == {}:
            pools.pop()
    return out


def job_spec_rest(job_spec: Any) -> dict[str, Any]:
    """A proto-plus ``CustomJobSpec`` (any message with ``to_dict``) as Vertex REST JSON:
    camelCase, enum names, ints, ``{}`` kept."""
    return normalize_spec(type(job_spec).to_dict(job_spec))
