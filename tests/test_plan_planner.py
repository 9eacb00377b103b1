"""The planner: the three worked Reduction Server examples, golden specs, cost, tuning env."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainpool.plan import PlanError, plan_cluster, size_reduction_server

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "requests"
US_REDUCER = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
V100X8 = {
    "machine_type": "n1-highmem-96",
    "accelerator_type": "NVIDIA_TESLA_V100",
    "accelerator_count": 8,
}


def test_example_1_five_v100_nodes_need_16_reducers() -> None:
    plan = plan_cluster(EXAMPLES / "reduction_server_v100.yaml")
    assert plan.reduction_server == {
        "replicaCount": 16,
        "sizedReplicaCount": 16,
        "machineType": "n1-highcpu-16",
        "imageUri": US_REDUCER,
        "gpuReplicas": 5,
        "workerEgressGbps": 500.0,
        "perReducerEgressGbps": 32.0,
        "reducerEgressGbps": 512.0,
        "allReduce": {
            "gradientSizeBytes": 104857600,
            "gpuReplicas": 5,
            "ringBytesPerWorker": 167772160,
            "reductionServerBytesPerWorker": 104857600,
            "ringToReductionServerRatio": 1.6,
        },
        "reducerCostPerHour": 9.0688,
        "jobCostPerHour": 136.6613,
        "overheadPercent": 7.11,
    }
    assert plan.warnings == []


def test_example_2_eight_a2_megagpu_need_25_reducers() -> None:
    plan = plan_cluster(EXAMPLES / "reduction_server_a2_megagpu.yaml")
    assert plan.reduction_server is not None
    assert plan.reduction_server["replicaCount"] == 25
    assert plan.reduction_server["workerEgressGbps"] == 800
    assert plan.reduction_server["overheadPercent"] == 3.18
    primary = plan.worker_pool_specs[0]["machineSpec"]
    assert primary == {
        "machineType": "a2-megagpu-16g",
        "acceleratorType": "NVIDIA_TESLA_A100",
        "acceleratorCount": 16,
    }


def test_example_3_two_a2_highgpu_4g_need_4_reducers_auto_picks_n1_highcpu_16() -> None:
    plan = plan_cluster(EXAMPLES / "reduction_server_a2_highgpu.yaml")
    assert plan.reduction_server is not None
    assert plan.reduction_server["replicaCount"] == 4
    assert plan.reduction_server["machineType"] == "n1-highcpu-16"
    assert plan.reduction_server["workerEgressGbps"] == 100


def test_golden_reduction_server_spec_in_europe() -> None:
    plan = plan_cluster(
        {
            "image_uri": "img:1",
            "primary": V100X8,
            "workers": {**V100X8, "replica_count": 1},
            "reduction_server": {"replica_count": 2},
            "evaluators": {"machine_type": "n1-standard-4"},
        },
        location="europe-west4",
    )
    machine = {
        "machineType": "n1-highmem-96",
        "acceleratorType": "NVIDIA_TESLA_V100",
        "acceleratorCount": 8,
    }
    assert plan.custom_job_spec == {
        "workerPoolSpecs": [
            {"machineSpec": machine, "replicaCount": 1, "containerSpec": {"imageUri": "img:1"}},
            {"machineSpec": machine, "replicaCount": 1, "containerSpec": {"imageUri": "img:1"}},
            {
                "machineSpec": {"machineType": "n1-highcpu-16"},
                "replicaCount": 2,
                "containerSpec": {
                    "imageUri": "europe-docker.pkg.dev/vertex-ai-restricted/training/"
                    "reductionserver:latest"
                },
            },
            {
                "machineSpec": {"machineType": "n1-standard-4"},
                "replicaCount": 1,
                "containerSpec": {"imageUri": "img:1"},
            },
        ]
    }
    assert plan.warnings == [
        "reduction_server.replica_count: 2 reducers give 64 Gbps for 200 Gbps of GPU replicas; "
        "sized: 7"
    ]


@pytest.mark.parametrize(
    ("location", "host"),
    [
        ("us-east4", "us"),
        ("northamerica-northeast1", "us"),
        ("europe-west1", "europe"),
        ("asia-southeast1", "asia"),
        ("australia-southeast1", "asia"),
        ("me-west1", "asia"),
    ],
)
def test_reducer_image_follows_the_multi_region(location: str, host: str) -> None:
    plan = plan_cluster(EXAMPLES / "reduction_server_v100.yaml", location=location)
    assert plan.reduction_server is not None
    assert plan.reduction_server["imageUri"] == f"{host}-docker.pkg.dev/" + (
        "vertex-ai-restricted/training/reductionserver:latest"
    )


def test_unknown_location_is_refused() -> None:
    with pytest.raises(PlanError) as err:
        plan_cluster(EXAMPLES / "no_image.yaml", location="mars-north1")
    assert str(err.value).startswith("location: 'mars-north1' is not a known location; accepted:")


def test_to_dict_is_the_json_shape_and_skipped_pools_stay() -> None:
    plan = plan_cluster(EXAMPLES / "primary_and_evaluator.yaml").to_dict()
    assert set(plan) == {"customJobSpec", "reductionServer", "cost", "warnings", "customJob"}
    pools = plan["customJobSpec"]["workerPoolSpecs"]
    assert [bool(p) for p in pools] == [True, False, False, True]
    assert plan["reductionServer"] is None
    assert plan["cost"]["jobPerHour"] == round(0.8536 + 0.19, 4)


def test_parameter_servers_plan_and_labels() -> None:
    plan = plan_cluster(EXAMPLES / "parameter_servers.yaml")
    assert plan.custom_job == {"labels": {"team": "ranking"}}
    assert [p["replicaCount"] for p in plan.worker_pool_specs] == [1, 4, 2, 1]
    assert plan.cost["pools"][2] == {
        "pool": 2,
        "role": "parameterServers",
        "replicaCount": 2,
        "perReplicaPerHour": 0.4732,
        "perHour": 0.9464,
    }


def test_tuning_env_goes_on_gpu_pools_only() -> None:
    plan = plan_cluster(
        {
            "image_uri": "img:1",
            "env": {"HOROVOD_FUSION_THRESHOLD": "1"},
            "primary": V100X8,
            "workers": {**V100X8, "replica_count": 1},
            "evaluators": {"machine_type": "n1-standard-4"},
        },
        tuning_env=True,
    )
    envs = [p["containerSpec"].get("env") for p in plan.worker_pool_specs if p]
    tuned = [
        {"name": "HOROVOD_FUSION_THRESHOLD", "value": "1"},
        {"name": "TRAINPOOL_DDP_BUCKET_CAP_MB", "value": "64"},
    ]
    assert envs == [tuned, tuned, [{"name": "HOROVOD_FUSION_THRESHOLD", "value": "1"}]]


def test_size_reduction_server_adds_pool_2_to_a_planned_spec() -> None:
    planned = plan_cluster(EXAMPLES / "no_image.yaml").custom_job_spec
    plan = size_reduction_server(planned, machine_type="n2-highcpu-16")
    assert plan.worker_pool_specs[2] == {
        "machineSpec": {"machineType": "n2-highcpu-16"},
        "replicaCount": 2,
        "containerSpec": {"imageUri": US_REDUCER},
    }
    assert plan.reduction_server is not None
    assert plan.reduction_server["workerEgressGbps"] == 64


def test_resizing_keeps_the_planned_reducer_machine_type() -> None:
    planned = size_reduction_server(
        plan_cluster(EXAMPLES / "no_image.yaml").custom_job_spec, machine_type="n2-highcpu-16"
    ).custom_job_spec
    resized = size_reduction_server(planned)
    assert resized.worker_pool_specs[2]["machineSpec"] == {"machineType": "n2-highcpu-16"}
    fresh = size_reduction_server(plan_cluster(EXAMPLES / "no_image.yaml").custom_job_spec)
    assert fresh.worker_pool_specs[2]["machineSpec"] == {"machineType": "n1-highcpu-16"}


def test_fixed_gpu_type_or_count_alone_is_completed() -> None:
    plan = plan_cluster(
        {
            "image_uri": "img:1",
            "primary": {"machine_type": "a2-highgpu-4g", "accelerator_type": "NVIDIA_TESLA_A100"},
            "workers": {
                "replica_count": 1,
                "machine_type": "a2-highgpu-4g",
                "accelerator_count": 4,
            },
        }
    )
    full = {
        "machineType": "a2-highgpu-4g",
        "acceleratorType": "NVIDIA_TESLA_A100",
        "acceleratorCount": 4,
    }
    assert [p["machineSpec"] for p in plan.worker_pool_specs] == [full, full]


def test_fixed_gpu_wrong_count_is_still_refused_when_type_left_out() -> None:
    with pytest.raises(
        PlanError, match=r"primary.accelerator_count: 2 does not match a2-highgpu-4g"
    ):
        plan_cluster(
            {
                "image_uri": "img:1",
                "primary": {"machine_type": "a2-highgpu-4g", "accelerator_count": 2},
            }
        )


def test_by_default_the_planned_reducer_count_is_kept_and_compared_with_the_rule() -> None:
    planned = plan_cluster(
        {
            "image_uri": "img:1",
            "primary": {"machine_type": "a2-highgpu-4g"},
            "workers": {"replica_count": 1, "machine_type": "a2-highgpu-4g"},
            "reduction_server": {"replica_count": 2},
        }
    ).custom_job_spec
    report = size_reduction_server(planned)
    assert report.worker_pool_specs[2]["replicaCount"] == 2
    assert report.reduction_server is not None
    assert (
        report.reduction_server["replicaCount"],
        report.reduction_server["sizedReplicaCount"],
    ) == (
        2,
        4,
    )
    assert any("sized: 4" in warning for warning in report.warnings)
    resized = size_reduction_server(planned, machine_type="n1-highcpu-16")
    assert resized.worker_pool_specs[2]["replicaCount"] == 4
