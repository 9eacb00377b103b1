"""Golden specs of pools the catalog learned: a TPU slice with its topology, M1, N4."""

from __future__ import annotations

import pytest

from trainpool.plan import PlanError, plan_cluster, validate_custom_job_spec


def test_golden_tpu_v5e_pool_with_its_topology() -> None:
    plan = plan_cluster(
        {
            "image_uri": "img:1",
            "primary": {"machine_type": "ct5lp-hightpu-4t", "tpu_topology": "4x4"},
        },
        location="us-west4",
    )
    assert plan.custom_job_spec == {
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "ct5lp-hightpu-4t", "tpuTopology": "4x4"},
                "replicaCount": 1,
                "containerSpec": {"imageUri": "img:1"},
            }
        ]
    }
    assert plan.warnings == ["cost: no list price for primary; totals leave them out"]
    assert validate_custom_job_spec(plan.custom_job_spec) == []


def test_golden_m1_pool() -> None:
    plan = plan_cluster({"image_uri": "img:1", "primary": {"machine_type": "m1-ultramem-40"}})
    assert plan.custom_job_spec == {
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "m1-ultramem-40"},
                "replicaCount": 1,
                "containerSpec": {"imageUri": "img:1"},
            }
        ]
    }
    assert plan.cost["unpriced"] == ["primary"]
    assert plan.warnings == ["cost: no list price for primary; totals leave them out"]


def test_golden_n4_pool_and_its_regional_prices() -> None:
    plan = plan_cluster(
        {
            "image_uri": "img:1",
            "primary": {"machine_type": "n4-highcpu-48"},
            "workers": {"machine_type": "n4-highcpu-48", "replica_count": 3},
        }
    )
    pool = {"machineSpec": {"machineType": "n4-highcpu-48"}, "containerSpec": {"imageUri": "img:1"}}
    assert plan.custom_job_spec == {
        "workerPoolSpecs": [{**pool, "replicaCount": 1}, {**pool, "replicaCount": 3}]
    }
    assert plan.cost["jobPerHour"] == round(4 * 1.83696, 4)
    assert plan.cost["spotPerHour"] == round(4 * 0.67987, 4)
    best = plan.cost["cheapestRegion"]
    assert best["region"] == "us-central1"
    assert len(best["regionsCompared"]) > 20


@pytest.mark.parametrize(
    ("pool", "message"),
    [
        (
            {"machine_type": "ct5lp-hightpu-4t"},
            "primary.tpu_topology: missing for ct5lp-hightpu-4t; accepted: 2x2, 2x4, 4x4, 4x8, "
            "8x8, 8x16, 16x16",
        ),
        (
            {"machine_type": "ct5lp-hightpu-8t", "tpu_topology": "4x4"},
            "primary.tpu_topology: '4x4' is not a topology Vertex allows for ct5lp-hightpu-8t; "
            "accepted: 2x4",
        ),
        (
            {
                "machine_type": "ct6e-standard-4t",
                "tpu_topology": "2x2",
                "accelerator_type": "TPU_V3",
            },
            "primary.accelerator_type: 'TPU_V3' does not match ct6e-standard-4t (TPU v6e); "
            "accepted: leave it out",
        ),
        (
            {"machine_type": "cloud-tpu", "accelerator_type": "TPU_V3", "accelerator_count": 4},
            "primary.accelerator_count: 4 TPU_V3 on cloud-tpu; accepted: 8",
        ),
        (
            {"machine_type": "n1-standard-8", "tpu_topology": "2x2"},
            "primary.tpu_topology: '2x2' on n1-standard-8; accepted: only with a TPU machine type "
            "(ct5lp-hightpu-*, ct6e-standard-*)",
        ),
    ],
)
def test_tpu_rules_name_the_field(pool: dict[str, object], message: str) -> None:
    with pytest.raises(PlanError) as err:
        plan_cluster({"image_uri": "img:1", "primary": pool})
    assert str(err.value) == message


def test_a_tpu_primary_runs_alone() -> None:
    tpu = {"machine_type": "ct6e-standard-4t", "tpu_topology": "2x2"}
    with pytest.raises(PlanError) as err:
        plan_cluster({"image_uri": "img:1", "primary": tpu, "workers": {**tpu, "replica_count": 2}})
    assert str(err.value).splitlines() == [
        "workers.machine_type: 'ct6e-standard-4t' in a pool other than the primary; accepted: a "
        "TPU machine type in the primary pool only (Vertex runs a TPU job as one pool of one "
        "replica; the topology sets how many VMs)",
        "workers: given beside a TPU primary (ct6e-standard-4t); accepted: no other pools (Vertex "
        "runs a TPU job as one worker pool; scale it with tpu_topology)",
    ]


def test_multi_host_tpu_price_counts_every_vm() -> None:
    plan = plan_cluster(
        {
            "image_uri": "img:1",
            "primary": {"machine_type": "ct6e-standard-4t", "tpu_topology": "4x4"},
        }
    )
    assert plan.cost["jobPerHour"] == round(4 * 10.8, 4)
    assert plan.cost["cheapestRegion"]["region"] == "us-central1"
    assert plan.cost["cheapestRegion"]["spotPerHour"] == round(4 * 2.17683, 4)
