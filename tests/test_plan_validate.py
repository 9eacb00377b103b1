"""validate_custom_job_spec: the planner's rules over a spec, with REST field names."""

from __future__ import annotations

from typing import Any

import pytest
from google.cloud.aiplatform_v1.types import CustomJobSpec

from trainpool.plan import PlanError, plan_cluster, validate_custom_job_spec
from trainpool.spec import to_snake

REDUCER = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
V100 = {
    "machineType": "n1-standard-16",
    "acceleratorType": "NVIDIA_TESLA_V100",
    "acceleratorCount": 2,
}


def pool(machine: dict[str, Any], count: int = 1, image: str = "img:1") -> dict[str, Any]:
    return {"machineSpec": machine, "replicaCount": count, "containerSpec": {"imageUri": image}}


def refused(spec: dict[str, Any]) -> str:
    with pytest.raises(PlanError) as err:
        validate_custom_job_spec(spec)
    return str(err.value)


def test_planned_spec_passes_in_rest_and_proto_forms() -> None:
    spec = plan_cluster(
        {
            "image_uri": "img:1",
            "primary": {"machine_type": "a2-highgpu-4g"},
            "workers": {"machine_type": "a2-highgpu-4g"},
            "reduction_server": {},
            "timeout": "60s",
            "scheduling_strategy": "SPOT",
        }
    ).custom_job_spec
    proto = CustomJobSpec.to_dict(CustomJobSpec(**to_snake(spec)))
    assert validate_custom_job_spec(spec) == []
    assert validate_custom_job_spec(proto) == []


def test_same_rule_as_the_request_with_rest_names() -> None:
    spec = {"workerPoolSpecs": [pool(V100), pool({**V100, "acceleratorCount": 1}, 2)]}
    assert refused(spec) == (
        "workerPoolSpecs[1].machineSpec.acceleratorCount: 1 NVIDIA_TESLA_V100 is not allowed on "
        "n1-standard-16; accepted: 2, 4, 8"
    )
    proto = CustomJobSpec.to_dict(CustomJobSpec(**to_snake(spec)))
    assert refused(proto) == refused(spec)


def test_kfp_floats_are_read_as_ints() -> None:
    spec = {"workerPoolSpecs": [{**pool(V100), "replicaCount": 1.0}]}
    assert validate_custom_job_spec(spec) == []
    assert refused({"workerPoolSpecs": [{**pool(V100), "replicaCount": 1.5}]}) == (
        "workerPoolSpecs[0].replicaCount: 1.5 is not accepted; accepted: a whole number from "
        "1 to 1000 (trainpool's bound; Vertex publishes none)"
    )


def test_launch_needs_an_image_and_a_reducer_count() -> None:
    spec = {
        "workerPoolSpecs": [
            {"machineSpec": V100, "replicaCount": 1},
            pool(V100, 2),
            {
                "machineSpec": {"machineType": "n1-highcpu-16"},
                "containerSpec": {"imageUri": REDUCER},
            },
        ]
    }
    assert refused(spec).splitlines() == [
        "workerPoolSpecs[0].containerSpec.imageUri: no container image; accepted: an image URI "
        "or a Python package (a planned pool without one gets the pipeline's built image at "
        "launch)",
        "workerPoolSpecs[2].replicaCount: missing; accepted: a whole number >= 1",
    ]
    assert validate_custom_job_spec(spec, launch=False) == [
        "workerPoolSpecs[0].containerSpec.imageUri: no container image; accepted: an image URI "
        "or a Python package (a planned pool without one gets the pipeline's built image at "
        "launch)"
    ]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"workerPoolSpecs": [{}, pool(V100)]},
            "workerPoolSpecs[0]: missing; accepted: a primary pool",
        ),
        ({"workerPoolSpecs": [pool(V100)] * 5}, "workerPoolSpecs: 5 pools; accepted: at most 4"),
        (
            {"workerPoolSpecs": [pool(V100)], "schedling": {}},
            "schedling: unknown key; accepted: baseOutputDirectory, enableDashboardAccess",
        ),
        (
            {"workerPoolSpecs": [{**pool(V100), "machineSpec": {**V100, "acceleratorTpe": 1}}]},
            "workerPoolSpecs[0].machineSpec.acceleratorTpe: unknown key; accepted: "
            "acceleratorCount, acceleratorType, gpuPartitionSize",
        ),
        (
            {
                "workerPoolSpecs": [
                    pool({"machineType": "n1-standard-4"}),
                    pool({"machineType": "n1-standard-4"}),
                    {**pool({"machineType": "n1-highcpu-16"}, 2, REDUCER)},
                ]
            },
            "workerPoolSpecs[2]: Reduction Server with CPU-only primary and workers",
        ),
        (
            {"workerPoolSpecs": [pool(V100)], "scheduling": {"strategy": "LOW_COST"}},
            "scheduling.strategy: 'LOW_COST' is not accepted; accepted: STANDARD, SPOT, FLEX_START",
        ),
        ({"workerPoolSpecs": "nope"}, "workerPoolSpecs: 'nope' is not accepted"),
    ],
)
def test_refused_specs(spec: dict[str, Any], expected: str) -> None:
    assert refused(spec).startswith(expected)
