"""Property: for any request the planner returns a plan or a PlanError, nothing else."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainpool.plan import PlanError, plan_cluster, validate_custom_job_spec

MACHINES = [
    "n1-standard-16",
    "n1-highmem-96",
    "n1-highcpu-16",
    "a2-highgpu-4g",
    "a3-highgpu-8g",
    "g2-standard-8",
    "n2-standard-16",
    "e2-highcpu-16",
    "auto",
    "bogus-1",
]
ACCELERATORS = ["NVIDIA_TESLA_V100", "NVIDIA_TESLA_T4", "NVIDIA_TESLA_A100", "NVIDIA_L4", "TPU_V3"]
ROLES = [("primary",), ("workers",), ("parameter_servers", "reduction_server"), ("evaluators",)]
numbers = st.one_of(st.integers(-2, 20), st.floats(-2, 20), st.sampled_from([1.0, 4.0, "2"]))


def pools() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "machine_type": st.sampled_from(MACHINES),
            "replica_count": numbers,
            "accelerator_type": st.sampled_from(ACCELERATORS),
            "accelerator_count": numbers,
            "boot_disk_size_gb": numbers,
            "image_uri": st.just("img:1"),
            "typo": st.just(1),
        },
    )


requests = st.fixed_dictionaries(
    {},
    optional={
        "image_uri": st.just("img:1"),
        "primary": pools(),
        "workers": pools(),
        "parameter_servers": pools(),
        "reduction_server": pools(),
        "evaluators": pools(),
        "timeout": st.sampled_from(["3600s", "1h", "0s", 5]),
        "scheduling_strategy": st.sampled_from(["SPOT", "FLEX_START", "CHEAP"]),
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests, st.sampled_from(["us-central1", "europe-west4", "mars-1"]), st.booleans())
def test_plan_or_plan_error(request: dict[str, Any], location: str, tuning: bool) -> None:
    try:
        plan = plan_cluster(request, location=location, tuning_env=tuning)
    except PlanError as err:
        assert err.problems and all(p.field and p.message for p in err.problems)
        return
    spec = plan.custom_job_spec
    pools = spec["workerPoolSpecs"]
    assert pools[0]["replicaCount"] == 1
    assert pools[-1] != {}
    # every pool sits at its role's position; a role the request left out is {} or trimmed
    for index, names in enumerate(ROLES):
        given = any(request.get(name) is not None for name in names)
        planned = index < len(pools) and pools[index] != {}
        assert planned == given, (index, request, pools)
    for pool in pools:
        if pool:
            assert type(pool["replicaCount"]) is int and pool["replicaCount"] >= 1
    # the plan passes the very validator the launcher and the emulator apply (raises if not)
    validate_custom_job_spec(spec, launch=False)
