"""Vertex's rules for a PersistentResource and for a job that runs on one, each with its source.

A **resource** (``aiplatform_v1/types/persistent_resource.py``, ``persistent_resource_service.py``):

- its id: "The maximum length is 63 characters, and valid characters are
  ``/^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/``" (CreatePersistentResourceRequest);
- ``resource_pools``: "Required. The spec of the pools of different resources"; each pool's
  ``machine_spec`` is "Required. Immutable"; its ``replica_count`` is "The total number of
  machines to use for this resource pool" (here at least 1, at most
  ``plan.pool_rules.MAX_REPLICA_COUNT``); each machine spec is judged by the same rules as a
  job's worker pool (``plan.validate_custom_job_spec``: known machine types, accelerators and
  their counts);
- ``autoscaling_spec``: ``min_replica_count`` "must be ≤ replica_count and < max_replica_count
  ... As for Persistent Resource, the min_replica_count must be > 0"; ``max_replica_count``
  "must be ≥ replica_count and > min_replica_count or will throw error"
  (ResourcePool.AutoscalingSpec);
- a pool's ``id`` "User can specify it if necessary. Otherwise, it's generated automatically"
  (here: the machine type, then ``-2``, ``-3``... when taken; Vertex's own choice of id is not
  documented).

A **job on a resource** (``CustomJobSpec.persistent_resource_id``: "the job will be run on
existing machines held by the PersistentResource instead of on-demand short-live machines";
Vertex's "Run training jobs on a persistent resource",
https://cloud.google.com/vertex-ai/docs/training/persistent-resource-train, paraphrased: each
worker pool's machine spec must match one of the resource's pools, and its replica count be at
most that pool's ``replica_count``, or its ``max_replica_count`` when the pool autoscales; the
page's exact words could not be re-read when this was written):
:func:`fit` refuses a job whose pools do not fit, naming the job's pool, what it asked and what
the resource has. Pools of a job with the same machine share that resource pool.
"""

from __future__ import annotations

import re
from typing import Any

from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import persistent_resource as pr

from trainpool.cluster_env import layout
from trainpool.errors import InputError, Problem, brief
from trainpool.plan import PlanError, validate_custom_job_spec
from trainpool.plan.pool_rules import MAX_REPLICA_COUNT
from trainpool.spec.normalize import job_spec_rest

RESOURCE_ID = re.compile(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?")
ID_RULE = (
    "accepted: 1-63 characters, lowercase letters, digits and '-', starting with a letter, "
    "not ending with '-'"
)
POOL_ID = re.compile(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?")

MachineKey = tuple[str, str, int, str]


def check_id(value: str, field: str = "persistent_resource_id") -> None:
    """INVALID_ARGUMENT unless ``value`` is a PersistentResource id Vertex accepts."""
    if not RESOURCE_ID.fullmatch(value or ""):
        raise InputError.of(field, f"{brief(value)} is not a PersistentResource id; {ID_RULE}")


def machine_key(machine_spec: dict[str, Any]) -> MachineKey:
    """What makes two machine specs (REST JSON) the same machine."""
    return (
        str(machine_spec.get("machineType", "")),
        str(machine_spec.get("acceleratorType", "")),
        int(machine_spec.get("acceleratorCount", 0) or 0),
        str(machine_spec.get("tpuTopology", "")),
    )


def describe(key: MachineKey) -> str:
    machine, accelerator, count, topology = key
    text = machine or "(no machine type)"
    if accelerator:
        text += f" with {count} x {accelerator}"
    if topology:
        text += f" ({topology})"
    return text


def pool_machine(pool: Any) -> dict[str, Any]:
    """A ResourcePool's machine spec as REST JSON (normalized as a job's is)."""
    spec = job_spec_rest(cj.CustomJobSpec(worker_pool_specs=[{"machine_spec": pool.machine_spec}]))
    pools = layout.pool_specs(spec)
    return dict(pools[0].get("machineSpec", {})) if pools else {}


def capacity(pool: Any) -> int:
    """The most replicas a pool holds: its autoscaling maximum, else its replica count."""
    if "autoscaling_spec" in pool and pool.autoscaling_spec.max_replica_count:
        return int(pool.autoscaling_spec.max_replica_count)
    return int(pool.replica_count)


def check_pools(
    resource: pr.PersistentResource,
    field: str = "persistent_resource.resource_pools",
    allow_unknown: bool = False,
) -> None:
    """INVALID_ARGUMENT (every problem) for pools Vertex would not create; fills missing pool
    ids."""
    pools = list(resource.resource_pools)
    problems: list[Problem] = []
    if not pools:
        raise InputError.of(
            field, "no resource pools; accepted: at least one pool with a machine_spec"
        )
    taken: set[str] = set()
    for i, pool in enumerate(pools):
        at = f"{field}[{i}]"
        problems += _pool_problems(pool, at, allow_unknown)
        if pool.id:
            if not POOL_ID.fullmatch(pool.id):
                problems.append(
                    Problem(f"{at}.id", f"{brief(pool.id)} is not a resource pool id; {ID_RULE}")
                )
            elif pool.id in taken:
                problems.append(
                    Problem(f"{at}.id", f"{brief(pool.id)} names two pools; accepted: unique ids")
                )
            taken.add(pool.id)
    if problems:
        raise InputError(problems)
    for pool in pools:
        if not pool.id:
            base = (pool.machine_spec.machine_type or "pool").lower()[:55]
            candidate, n = base, 1
            while candidate in taken:
                n += 1
                candidate = f"{base}-{n}"
            pool.id = candidate
            taken.add(candidate)
    resource.resource_pools = pools


def _pool_problems(pool: Any, at: str, allow_unknown: bool) -> list[Problem]:
    problems: list[Problem] = []
    if not pool.machine_spec.machine_type:
        return [Problem(f"{at}.machine_spec.machine_type", "missing; accepted: a machine type")]
    count = int(pool.replica_count)
    if not 1 <= count <= MAX_REPLICA_COUNT:
        problems.append(
            Problem(
                f"{at}.replica_count",
                f"{count}; accepted: 1 to {MAX_REPLICA_COUNT} machines in a pool",
            )
        )
    spec = {"workerPoolSpecs": [{"machineSpec": pool_machine(pool), "replicaCount": 1}]}
    try:
        validate_custom_job_spec(spec, launch=False, allow_unknown_machine_types=allow_unknown)
    except PlanError as err:
        for problem in err.problems:
            name = problem.field.replace("workerPoolSpecs[0].machineSpec", f"{at}.machine_spec")
            message = problem.message
            if "accepted" not in message:
                message += "; accepted: a machine Vertex training offers (trainpool catalog)"
            problems.append(Problem(name, message))
    if "autoscaling_spec" in pool:
        scaling = pool.autoscaling_spec
        low, high = int(scaling.min_replica_count), int(scaling.max_replica_count)
        where = f"{at}.autoscaling_spec"
        if low <= 0:
            problems.append(
                Problem(
                    f"{where}.min_replica_count",
                    f"{low}; accepted: more than 0 for a persistent resource",
                )
            )
        elif low > count:
            problems.append(
                Problem(
                    f"{where}.min_replica_count",
                    f"{low}; accepted: at most replica_count ({count})",
                )
            )
        if high and (high < count or high <= low):
            problems.append(
                Problem(
                    f"{where}.max_replica_count",
                    f"{high}; accepted: at least replica_count ({count}) and more than "
                    f"min_replica_count ({low})",
                )
            )
    return problems


def fit(resource: pr.PersistentResource, spec: dict[str, Any], field: str) -> dict[str, int]:
    """The replicas a job (its CustomJobSpec as REST JSON) takes from each of ``resource``'s
    pools (pool id -> replicas); INVALID_ARGUMENT, naming the job's pool, what it asked and
    what the resource has, when it does not fit."""
    pools = list(resource.resource_pools)
    machines = [(pool, machine_key(pool_machine(pool))) for pool in pools]
    have = "; ".join(f"{p.id}: {describe(k)}, at most {capacity(p)}" for p, k in machines)
    need: dict[str, int] = {}
    asked: dict[str, list[int]] = {}
    problems: list[Problem] = []
    for i, wp in enumerate(layout.pool_specs(spec)):
        if not wp:
            continue
        key = machine_key(wp.get("machineSpec", {}))
        match = next((p for p, k in machines if k == key), None)
        if match is None:
            problems.append(
                Problem(
                    f"{field}.workerPoolSpecs[{i}].machineSpec",
                    f"{describe(key)}: the persistent resource {resource.name} has no resource "
                    f"pool of that machine; accepted: a machine of one of its pools ({have})",
                )
            )
            continue
        need[match.id] = need.get(match.id, 0) + layout.replica_count(wp, i)
        asked.setdefault(match.id, []).append(i)
    for pool in pools:
        if pool.id in need and need[pool.id] > capacity(pool):
            which = ", ".join(f"workerPoolSpecs[{i}]" for i in asked[pool.id])
            problems.append(
                Problem(
                    f"{field}.workerPoolSpecs[{asked[pool.id][0]}].replicaCount",
                    f"{need[pool.id]} replicas of {describe(machine_key(pool_machine(pool)))} "
                    f"({which}): the resource pool {pool.id} of {resource.name} holds at most "
                    f"{capacity(pool)}; accepted: at most {capacity(pool)}",
                )
            )
    if problems:
        raise InputError(problems)
    return need
