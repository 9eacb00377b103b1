"""One validation pass over a CustomJobSpec, used for requests and for specs alike.

``plan_cluster`` renders a request and runs ``check`` with request names;
``validate_custom_job_spec`` (what the emulator calls) runs the same ``check``
with REST names. One rule, one place.
"""

from __future__ import annotations

from typing import Any

from trainpool.plan.cluster_rules import check_cluster
from trainpool.plan.findings import Findings
from trainpool.plan.job_rules import check_job, check_keys
from trainpool.plan.naming import Namer, RestNamer
from trainpool.plan.pool_rules import check_pool
from trainpool.plan.region_rules import check_location
from trainpool.plan.tpu_rules import check_tpu_cluster
from trainpool.spec.keys import coerce_ints, to_rest
from trainpool.spec.normalize import normalize_spec

POOL_ROLES = "pool 0 primary, 1 workers, 2 parameter servers or Reduction Server, 3 evaluators"


def check(
    spec: dict[str, Any],
    names: Namer,
    *,
    launch: bool,
    allow_unknown: bool = False,
    location: str | None = None,
    as_vertex: bool = False,
) -> Findings:
    """Problems and warnings of a normalized REST spec (``location``: also where it runs;
    ``as_vertex``: trainpool's advice as warnings, :meth:`Findings.advise`)."""
    found = Findings(as_vertex=as_vertex)
    pools = spec.get("workerPoolSpecs")
    if not isinstance(pools, list) or not all(isinstance(p, dict) for p in pools):
        found.error(
            names.job("workerPoolSpecs"),
            f"{pools!r} is not accepted; accepted: a list of up to 4 pool specs ({POOL_ROLES})",
        )
        return found
    if len(pools) > 4:
        found.error(
            names.job("workerPoolSpecs"), f"{len(pools)} pools; accepted: at most 4 ({POOL_ROLES})"
        )
    if not pools or not pools[0]:
        found.error(
            names.pool(0),
            "missing; accepted: a primary pool with replica count 1 "
            "(skip other pools with {}, never the primary)",
        )
    for index, pool in enumerate(pools[:4]):
        if pool:
            check_pool(index, pool, names, found, launch=launch, allow_unknown=allow_unknown)
    check_cluster(pools[:4], names, found)
    check_tpu_cluster(pools, names, found)
    if location is not None:
        check_location(pools, location, names, found)
    check_job(spec, names, found)
    return found


def validate_custom_job_spec(
    spec: dict[str, Any],
    *,
    launch: bool = True,
    allow_unknown_machine_types: bool = False,
    as_vertex: bool = False,
) -> list[str]:
    """Warnings for a spec Vertex would accept; PlanError (every problem) for one it would not.

    Accepts camelCase REST JSON or the snake_case ``CustomJobSpec.to_dict()``. With
    ``launch=False`` (a plan still waiting for its built image) a pool without an image
    and a Reduction Server without a replica count are allowed.
    ``allow_unknown_machine_types`` turns an unknown machine type into a warning.
    ``as_vertex`` (the emulator) judges as Vertex's API does: what trainpool advises
    against but Vertex accepts is a warning.
    """
    found = Findings()
    if not isinstance(spec, dict):
        found.error("customJobSpec", f"{type(spec).__name__} is not accepted; accepted: a dict")
        found.raise_if_any()
    check_keys(to_rest(coerce_ints(spec)), found)
    found.raise_if_any()
    found = check(
        normalize_spec(spec),
        RestNamer(),
        launch=launch,
        allow_unknown=allow_unknown_machine_types,
        as_vertex=as_vertex,
    )
    found.raise_if_any()
    return found.warnings
