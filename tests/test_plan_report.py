"""The plan report: quiet about images in the pipeline's normal case, warns when none will come."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kfp import components, local

from pipelines.distributed_training import DEFAULT_REQUEST
from trainpool.plan import plan_cluster
from trainpool.plan.report import markdown, warnings

ROOT = Path(__file__).resolve().parents[1]
IMAGE = "us-docker.pkg.dev/p/trainpool/pytorch-ddp"


def default_plan() -> dict[str, Any]:
    """The plan of the pipeline's default request: primary and workers name no image."""
    return plan_cluster(DEFAULT_REQUEST).to_dict()


def test_without_a_pipeline_image_every_imageless_pool_is_warned_about() -> None:
    plan = default_plan()
    report = markdown(plan)
    assert report.count(": no container image;") == 2  # primary and workers
    assert "### Warnings" in report
    assert report.count("| (none named) |") == 2
    assert warnings(plan) == plan["warnings"]


def test_with_the_pipeline_image_the_report_names_it_and_has_no_image_warning() -> None:
    report = markdown(default_plan(), pipeline_image=IMAGE)
    assert "no container image" not in report
    assert "### Warnings" not in report
    assert report.count(f"| {IMAGE} (the pipeline's image) |") == 2


def test_other_warnings_stay_with_a_pipeline_image() -> None:
    plan = {
        "warnings": [
            "primary.image_uri: no container image; accepted: an image URI",
            "reductionServer: sized: 4, kept: 2",
        ]
    }
    assert warnings(plan, IMAGE) == ["reductionServer: sized: 4, kept: 2"]
    assert warnings(plan) == plan["warnings"]


@pytest.mark.timeout(180)
def test_the_plan_task_of_the_default_pipeline_reports_no_image_warning(tmp_path: Path) -> None:
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(tmp_path))
    task = components.load_component_from_file(str(ROOT / "component_specs/plan_cluster.yaml"))
    quiet = task(cluster_request=DEFAULT_REQUEST, pipeline_image=IMAGE).outputs
    assert quiet["warnings"] == []
    assert "no container image" not in Path(quiet["plan_report"].path).read_text()
    loud = task(cluster_request=DEFAULT_REQUEST).outputs
    assert len(loud["warnings"]) == 2
    assert "no container image" in Path(loud["plan_report"].path).read_text()


def test_the_pipeline_tells_the_plan_task_its_image() -> None:
    compiled = (ROOT / "pipelines" / "distributed_training.yaml").read_text()
    task = compiled[compiled.index("      plan-cluster:") :]
    task = task[: task.index("taskInfo:")]
    assert "pipeline_image:\n              componentInputParameter: image_uri" in task
