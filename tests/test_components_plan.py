"""plan_cluster and size_reduction_server run by kfp.local from their compiled YAML."""

from __future__ import annotations

from pathlib import Path

import pytest
from kfp import components, local

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "component_specs"
V100 = {
    "machine_type": "n1-standard-16",
    "accelerator_type": "NVIDIA_TESLA_V100",
    "accelerator_count": 2,
}

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True)
def local_runner(tmp_path: Path) -> None:
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(tmp_path))


def test_plan_cluster_component_applies_knobs_and_writes_a_report() -> None:
    plan_cluster = components.load_component_from_file(str(SPECS / "plan_cluster.yaml"))
    task = plan_cluster(
        cluster_request={"image_uri": "img:1", "primary": V100, "labels": {"team": "ranking"}},
        worker_count=3,
        reduction_server="on",
    )
    outputs = task.outputs
    assert outputs["has_reduction_server"] is True
    assert outputs["reduction_server"]["replicaCount"] == 4
    assert outputs["reduction_server"]["workerEgressGbps"] == 128
    assert [p["replicaCount"] for p in outputs["worker_pool_specs"]] == [1, 3, 4]
    assert outputs["custom_job_spec"]["workerPoolSpecs"] == outputs["worker_pool_specs"]
    assert outputs["warnings"] == []
    assert outputs["job_fields"] == {"labels": {"team": "ranking"}}
    report = Path(outputs["plan_report"].path).read_text()
    assert "| 2 | Reduction Server | 4 | n1-highcpu-16 |" in report


def test_size_reduction_server_component_resizes_a_planned_spec() -> None:
    size = components.load_component_from_file(str(SPECS / "size_reduction_server.yaml"))
    spec = {
        "workerPoolSpecs": [
            {"machineSpec": {"machineType": "a2-highgpu-4g"}, "replicaCount": 1.0},
            {"machineSpec": {"machineType": "a2-highgpu-4g"}, "replicaCount": 1.0},
        ]
    }
    task = size(custom_job_spec=spec, location="asia-east1", gradient_size_mb=64.0)
    outputs = task.outputs
    assert outputs["replica_count"] == 4
    pool2 = outputs["custom_job_spec"]["workerPoolSpecs"][2]
    assert pool2 == {
        "machineSpec": {"machineType": "n1-highcpu-16"},
        "replicaCount": 4,
        "containerSpec": {
            "imageUri": "asia-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
        },
    }
    assert outputs["sizing"]["allReduce"]["gradientSizeBytes"] == 64 * 1024 * 1024
    assert "Reduction Server sizing" in Path(outputs["sizing_report"].path).read_text()


def test_size_reduction_server_only_if_planned_keeps_a_spec_without_one() -> None:
    """In the pipeline the sizing always runs and its spec is launched: a plan without a
    Reduction Server passes through unchanged, whatever reducer machine type is given."""
    size = components.load_component_from_file(str(SPECS / "size_reduction_server.yaml"))
    spec = {
        "workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1}]
    }
    task = size(custom_job_spec=spec, only_if_planned=True, reducer_machine_type="auto")
    assert task.outputs["custom_job_spec"] == spec
    assert task.outputs["replica_count"] == 0 and task.outputs["sizing"] == {}
    assert "No Reduction Server is planned" in Path(task.outputs["sizing_report"].path).read_text()


def test_plan_cluster_component_fails_on_a_bad_request() -> None:
    plan_cluster = components.load_component_from_file(str(SPECS / "plan_cluster.yaml"))
    with pytest.raises(RuntimeError):
        plan_cluster(
            cluster_request={"primary": {"machine_type": "n1-standard-4"}}, reduction_server="maybe"
        )


def test_plan_cluster_component_escape_hatch() -> None:
    plan_cluster = components.load_component_from_file(str(SPECS / "plan_cluster.yaml"))
    request = {"image_uri": "img:1", "primary": {"machine_type": "a5-futuregpu-8g"}}
    with pytest.raises(RuntimeError):
        plan_cluster(cluster_request=request)
    task = plan_cluster(cluster_request=request, allow_unknown_machine_types=True)
    assert task.outputs["warnings"][0].startswith(
        "primary.machine_type: 'a5-futuregpu-8g' is not in the catalog; accepted because"
    )
