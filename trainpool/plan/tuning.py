"""The documented all-reduce tuning for Reduction Server, as env on GPU pools (opt-in).

Larger all-reduce messages help: PyTorch DDP ``bucket_cap_mb=64`` (the trainer reads
``TRAINPOOL_DDP_BUCKET_CAP_MB``) and Horovod ``HOROVOD_FUSION_THRESHOLD`` = 128 MiB.
"""

from __future__ import annotations

from typing import Any

from trainpool.plan.machine_rules import gpu_count

TUNING_ENV = {"TRAINPOOL_DDP_BUCKET_CAP_MB": "64", "HOROVOD_FUSION_THRESHOLD": "134217728"}


def add_tuning_env(pools: list[dict[str, Any]]) -> None:
    """Add the tuning env to GPU pools 0 and 1 in place; values the user set are kept."""
    for pool in pools[:2]:
        if not pool or gpu_count(pool.get("machineSpec") or {}) == 0:
            continue
        runtime = pool.get("pythonPackageSpec") or pool.setdefault("containerSpec", {})
        env = runtime.setdefault("env", [])
        present = {entry.get("name") for entry in env}
        env.extend({"name": k, "value": v} for k, v in TUNING_ENV.items() if k not in present)
