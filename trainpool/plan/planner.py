"""The planner: a cluster request → a validated CustomJobSpec, Reduction Server sizing, cost."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainpool import catalog
from trainpool.cluster_env.layout import is_reduction_server
from trainpool.plan.cluster_rules import gpu_replicas
from trainpool.plan.cost import cluster_cost
from trainpool.plan.errors import PlanError, Problem
from trainpool.plan.findings import Findings
from trainpool.plan.label_rules import label_problems
from trainpool.plan.naming import Namer, RequestNamer, RestNamer
from trainpool.plan.regions import check_location_name, reducer_image
from trainpool.plan.sizing import (
    DEFAULT_REDUCER,
    allreduce_bytes,
    cheapest_reducer,
    check_gradient_size,
    reducer_count,
    worker_egress_gbps,
)
from trainpool.plan.tuning import add_tuning_env
from trainpool.plan.validate import check
from trainpool.spec import ClusterRequest, SpecError, load_request, normalize_spec
from trainpool.spec.render import render_job_fields, render_job_spec


@dataclass(frozen=True)
class Plan:
    """What the planner returns; ``to_dict()`` is the ``trainpool plan --json`` shape."""

    custom_job_spec: dict[str, Any]
    reduction_server: dict[str, Any] | None
    cost: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    custom_job: dict[str, Any] = field(default_factory=dict)

    @property
    def worker_pool_specs(self) -> list[dict[str, Any]]:
        return self.custom_job_spec["workerPoolSpecs"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "customJobSpec": copy.deepcopy(self.custom_job_spec),
            "reductionServer": copy.deepcopy(self.reduction_server),
            "cost": copy.deepcopy(self.cost),
            "warnings": list(self.warnings),
            "customJob": copy.deepcopy(self.custom_job),
        }


def _fill_fixed_gpus(pools: list[dict[str, Any]]) -> None:
    """Fixed-GPU machine types get whichever accelerator field is left out.

    Vertex needs both acceleratorType and acceleratorCount on an a2/a3/g2 machine, so
    one given without the other is completed here (a wrong one is then named by check).
    """
    for index, pool in enumerate(pools):
        reducer = index == 2 and is_reduction_server(pool)
        machine = pool.get("machineSpec") if pool and not reducer else None
        if not machine:
            continue
        try:
            gpu = catalog.fixed_gpu(str(machine.get("machineType", "")))
        except catalog.UnknownName:
            continue
        if gpu is not None:
            machine.setdefault("acceleratorType", gpu.accelerator_type)
            machine.setdefault("acceleratorCount", gpu.accelerator_count)


POOL_KEYS = ("machineSpec", "replicaCount", "containerSpec", "pythonPackageSpec", "diskSpec")


def _ordered(pool: dict[str, Any]) -> dict[str, Any]:
    """A pool's keys in one fixed order, so rendered specs read (and diff) the same."""
    rank = {key: n for n, key in enumerate(POOL_KEYS)}
    return {key: pool[key] for key in sorted(pool, key=lambda k: (rank.get(k, len(rank)), k))}


def _size(
    pools: list[dict[str, Any]],
    given: int | None,
    gradient_size_mb: float,
    names: Namer,
    found: Findings,
) -> dict[str, Any]:
    """Set pool 2's replica count (sized unless ``given``) and describe the sizing."""
    machine = pools[2]["machineSpec"]["machineType"]
    worker_gbps = worker_egress_gbps(pools)
    try:
        per_reducer = catalog.vm_egress_gbps(machine)
    except catalog.UnknownName:
        raise PlanError(
            [
                Problem(
                    names.pool(2, "machineSpec.machineType"),
                    f"{machine!r} is not in the catalog, so its egress is unknown; accepted: a "
                    "known CPU machine type such as n1-highcpu-16 (reducers are sized by egress)",
                )
            ]
        ) from None
    sized = reducer_count(worker_gbps, per_reducer)
    count = given if given is not None else sized
    pools[2]["replicaCount"] = count
    if count < sized:
        found.warn(
            names.pool(2, "replicaCount"),
            f"{count} reducers give {count * per_reducer:g} Gbps for {worker_gbps:g} Gbps "
            f"of GPU replicas; sized: {sized}",
        )
    return {
        "replicaCount": count,
        "sizedReplicaCount": sized,
        "machineType": machine,
        "imageUri": pools[2]["containerSpec"]["imageUri"],
        "gpuReplicas": gpu_replicas(pools),
        "workerEgressGbps": worker_gbps,
        "perReducerEgressGbps": per_reducer,
        "reducerEgressGbps": count * per_reducer,
        "allReduce": allreduce_bytes(gradient_size_mb, gpu_replicas(pools)),
    }


def _finish(
    spec: dict[str, Any],
    custom_job: dict[str, Any],
    found: Findings,
    *,
    given: int | None,
    gradient_size_mb: float,
    tuning_env: bool,
    names: Namer,
    allow_unknown: bool = False,
    location: str | None = None,
) -> Plan:
    pools = spec["workerPoolSpecs"]
    checked = check(spec, names, launch=False, allow_unknown=allow_unknown, location=location)
    found.problems += checked.problems
    found.raise_if_any()
    found.warnings += checked.warnings
    sizing = None
    if len(pools) > 2 and pools[2] and is_reduction_server(pools[2]):
        sizing = _size(pools, given, gradient_size_mb, names, found)
    if tuning_env:
        add_tuning_env(pools)
    pools[:] = [_ordered(pool) for pool in pools]
    cost = cluster_cost(pools)
    if cost["unpriced"]:
        found.warn(
            "cost", f"no list price for {', '.join(cost['unpriced'])}; totals leave them out"
        )
    if sizing is not None:
        sizing["reducerCostPerHour"] = cost["reducersPerHour"]
        sizing["jobCostPerHour"] = cost["jobPerHour"]
        sizing["overheadPercent"] = cost["reducerOverheadPercent"]
    return Plan(spec, sizing, cost, found.warnings, custom_job)


def plan_cluster(
    request: ClusterRequest | dict[str, Any] | str | Path,
    *,
    location: str = "us-central1",
    tuning_env: bool = False,
    gradient_size_mb: float = 100.0,
    allow_unknown_machine_types: bool = False,
) -> Plan:
    """Validate and plan a cluster request; PlanError lists every problem, by request field.

    A pool whose machine or accelerator is not offered in ``location`` is refused (where the
    catalog has region data); an unknown machine type is accepted with a warning when
    ``allow_unknown_machine_types`` (or the request's field of that name) is set.
    """
    try:
        req = load_request(request)
    except SpecError as err:
        raise PlanError(err.problems) from None
    found = Findings()
    try:
        check_location_name(location)
    except PlanError as err:
        found.problems += err.problems
    try:
        check_gradient_size(gradient_size_mb)
    except PlanError as err:
        found.problems += err.problems
    found.problems += label_problems(req.labels, "labels")
    if req.reduction_server is not None and req.parameter_servers is not None:
        found.error(
            "reduction_server",
            "given together with parameter_servers; accepted: one of them (both use pool 2)",
        )
    found.raise_if_any()
    names = RequestNamer("reduction_server" if req.reduction_server else "parameter_servers")
    spec = render_job_spec(req)
    pools = spec["workerPoolSpecs"]
    for index, pool in enumerate(pools):
        if pool and not (index == 2 and req.reduction_server):
            pool.setdefault("replicaCount", 1)
    if req.reduction_server is not None:
        machine = pools[2]["machineSpec"]
        wanted = machine.get("machineType") or DEFAULT_REDUCER
        machine["machineType"] = cheapest_reducer() if wanted == "auto" else wanted
        pools[2]["containerSpec"] = {"imageUri": reducer_image(location)}
    _fill_fixed_gpus(pools)
    given = req.reduction_server.replica_count if req.reduction_server else None
    return _finish(
        spec,
        render_job_fields(req),
        found,
        given=given,
        gradient_size_mb=gradient_size_mb,
        tuning_env=tuning_env,
        names=names,
        allow_unknown=allow_unknown_machine_types or bool(req.allow_unknown_machine_types),
        location=location,
    )


def size_reduction_server(
    custom_job_spec: dict[str, Any],
    *,
    location: str = "us-central1",
    machine_type: str = "",
    gradient_size_mb: float = 100.0,
) -> Plan:
    """Put a sized Reduction Server in pool 2 of a planned spec (REST or snake_case).

    ``machine_type`` "" keeps the Reduction Server the spec already has, its machine
    type and replica count, and reports how it compares with the sizing rule (with
    none, it sizes n1-highcpu-16 reducers); a machine type, or "auto" for the
    cheapest CPU machine per Gbps, re-sizes the pool for that machine.
    """
    check_location_name(location)
    check_gradient_size(gradient_size_mb)
    spec = normalize_spec(custom_job_spec)
    pools = spec.setdefault("workerPoolSpecs", [])
    names = RestNamer()
    if len(pools) > 2 and pools[2] and not is_reduction_server(pools[2]):
        raise PlanError(
            [
                Problem(
                    names.pool(2),
                    "holds parameter servers; accepted: an empty "
                    "pool 2 or a Reduction Server to resize",
                )
            ]
        )
    planned = pools[2] if len(pools) > 2 else {}
    pools.extend({} for _ in range(3 - len(pools)))
    given = None
    if machine_type == "auto":
        chosen = cheapest_reducer()
    elif machine_type:
        chosen = machine_type
    else:
        chosen = planned.get("machineSpec", {}).get("machineType") or DEFAULT_REDUCER
        given = planned.get("replicaCount")
    pools[2] = {
        "machineSpec": {"machineType": chosen},
        "containerSpec": {"imageUri": reducer_image(location)},
    }
    return _finish(
        spec,
        {},
        Findings(),
        given=given,
        gradient_size_mb=gradient_size_mb,
        tuning_env=False,
        names=names,
    )
