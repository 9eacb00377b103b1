"""Pool roles of a CustomJobSpec: which replicas exist and which pool is a Reduction Server.

Accepts the REST form (camelCase) and the proto ``to_dict()`` form (snake_case), and a
``replicaCount`` given as an int, a whole float (``2.0``, from a KFP Struct) or a string
(``"2"``, the proto REST form of int64).
"""

from __future__ import annotations

import math
import re
from typing import Any

REDUCTION_SERVER_IMAGE = re.compile(
    r"^(?:[^/]+/)?vertex-ai-restricted/training/reductionserver(?:[:@][^/]*)?$"
)
"""Google's reducer image on any registry host (us-, europe-, asia-docker.pkg.dev), any tag."""


def get_key(mapping: dict[str, Any], camel: str, snake: str) -> Any:
    """The value under the camelCase key, else under the snake_case key, else None."""
    if camel in mapping:
        return mapping[camel]
    return mapping.get(snake)


def pool_specs(job_spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The worker pool specs of ``job_spec`` in positional order (``{}`` kept)."""
    pools = get_key(job_spec, "workerPoolSpecs", "worker_pool_specs")
    if pools is None:
        return []
    if not isinstance(pools, list):
        raise ValueError(
            f"workerPoolSpecs: {pools!r} is not a list; accepted: a list of up to 4 pool specs"
        )
    return pools


def replica_count(pool_spec: dict[str, Any], pool: int = 0) -> int:
    """The pool's replica count as an int (0 for ``{}`` or a missing count)."""
    raw = get_key(pool_spec, "replicaCount", "replica_count")
    if raw is None:
        return 0
    if isinstance(raw, bool):
        raise ValueError(
            f"workerPoolSpecs[{pool}].replicaCount: {raw!r} is not a whole number; "
            'accepted: an int, a whole float such as 2.0, or a string such as "2"'
        )
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = float("nan")
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise ValueError(
            f"workerPoolSpecs[{pool}].replicaCount: {raw!r} is not a whole number >= 0; "
            'accepted: an int, a whole float such as 2.0, or a string such as "2"'
        )
    return int(value)


def image_uri(pool_spec: dict[str, Any]) -> str:
    """The pool's container image URI, or "" when it has none."""
    container = get_key(pool_spec, "containerSpec", "container_spec") or {}
    return str(get_key(container, "imageUri", "image_uri") or "")


def is_reduction_server(pool_spec: dict[str, Any]) -> bool:
    """True when the pool runs Google's Reduction Server image (any region host, any tag)."""
    return bool(REDUCTION_SERVER_IMAGE.match(image_uri(pool_spec)))


def replicas(job_spec: dict[str, Any]) -> list[tuple[int, int]]:
    """``(pool, index)`` for every replica of every non-empty pool, in launch order."""
    return [
        (pool, index)
        for pool, spec in enumerate(pool_specs(job_spec))
        for index in range(replica_count(spec or {}, pool))
    ]


POOL_ROLES = ("primary", "worker", "parameter_server", "evaluator")
"""The role of pools 0..3; pool 2 is ``reduction_server`` when it runs the reducer image."""


def pool_role(job_spec: dict[str, Any], pool: int) -> str:
    """The role of ``pool`` in ``job_spec``: primary, worker, parameter_server,
    reduction_server or evaluator."""
    pools = pool_specs(job_spec)
    if pool == 2 and pool < len(pools) and is_reduction_server(pools[pool] or {}):
        return "reduction_server"
    return POOL_ROLES[pool]


def node_ranks(
    job_spec: dict[str, Any], reducers_in_world: bool = False
) -> dict[tuple[int, int], int]:
    """Vertex's node rank of every replica: pool order, then index (chief 0, worker i → i+1).

    Reduction Server replicas have no rank unless ``reducers_in_world``.
    """
    pools = pool_specs(job_spec)
    members = [
        (pool, index)
        for pool, index in replicas(job_spec)
        if reducers_in_world or not (pool == 2 and is_reduction_server(pools[2] or {}))
    ]
    return {member: rank for rank, member in enumerate(members)}
