"""hyperparameter_sweep (component_specs/, kfp.local): a real grid over the PyTorch trainer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.runtime import vendored_runtime
from fixtures.stand_ins import share_stand_ins
from fixtures.vertex import PARENT
from kfp import components, local

import trainpool.emulator as emulator
from trainpool.vertex.clients import job_client

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

ROOT = Path(__file__).parent.parent
SPEC = ROOT / "component_specs" / "hyperparameter_sweep.yaml"
PYTORCH_IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-xla.2-4.py310:latest"
STUDY = {
    "metrics": {"loss": "minimize"},
    "parameters": {"lr": {"type": "discrete", "values": [0.001, 0.01, 0.1]}},
    "algorithm": "grid",
}


def trainer_spec(runtime: Path) -> dict[str, Any]:
    package = {
        # a Vertex PyTorch image; the example imports trainpool's runtime, which a prebuilt
        # image (and its local stand-in) does not have: it is shipped beside the trainer
        "executorImageUri": PYTORCH_IMAGE,
        "packageUris": [str(ROOT / "examples" / "pytorch_ddp"), str(runtime)],
        "pythonModule": "trainer.task",
        "args": ["--epochs=2"],
    }
    pool = {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": 1,
        "pythonPackageSpec": package,
    }
    return {"workerPoolSpecs": [pool], "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/sweep"}}


@pytest.fixture
def sweep_component(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with emulator.start(share_stand_ins(tmp_path / "root")) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        local.init(local.SubprocessRunner(use_venv=False), pipeline_root=str(tmp_path / "kfp"))
        yield components.load_component_from_file(str(SPEC))


def test_grid_over_lr_of_the_pytorch_example_picks_the_documented_best(
    sweep_component: Any, tmp_path: Path
) -> None:
    task = sweep_component(
        project="demo",
        location="us-central1",
        display_name="lr-grid",
        custom_job_spec=trainer_spec(vendored_runtime(tmp_path / "runtime")),
        study=STUDY,
        max_trial_count=3,
        parallel_trial_count=3,
    )
    assert task.outputs["best_parameters"] == {"lr": 0.1}
    trials = json.loads(Path(task.outputs["trials"].path).read_text())
    assert sorted(t["parameters"]["lr"] for t in trials) == [0.001, 0.01, 0.1]
    assert {t["state"] for t in trials} == {"SUCCEEDED"}
    best = next(t for t in trials if t["id"] == task.outputs["best_trial_id"])
    assert best["parameters"] == {"lr": 0.1}
    assert task.outputs["best_metric_value"] == min(t["metrics"]["loss"] for t in trials)
    html = Path(task.outputs["trials_report"].path).read_text()
    assert html.count("<tr") == 4 and f"best: trial {best['id']}, loss = " in html
    assert "loss against each parameter" in html and "Search history" in html
    metrics = task.outputs["metrics"].metadata
    assert metrics == {"loss": task.outputs["best_metric_value"], "trials": 3}
    (job,) = job_client("us-central1").list_hyperparameter_tuning_jobs(parent=PARENT)
    assert job.state.name == "JOB_STATE_SUCCEEDED"


def test_an_invalid_study_is_refused_before_anything_is_created(
    sweep_component: Any, capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    study = {**STUDY, "parameters": {"lr": {"type": "double", "min": 0.001, "max": 0.1}}}
    with pytest.raises(RuntimeError):
        sweep_component(
            project="demo",
            location="us-central1",
            display_name="lr-grid",
            custom_job_spec=trainer_spec(vendored_runtime(tmp_path / "runtime")),
            study=study,
            max_trial_count=2,
            parallel_trial_count=3,
        )
    output = capfd.readouterr()
    assert (
        "studySpec.algorithm: GRID_SEARCH with DOUBLE parameters ['lr']" in output.out + output.err
    )
    assert "parallelTrialCount: 3; accepted: 1 to maxTrialCount (2)" in output.out + output.err
    assert list(job_client("us-central1").list_hyperparameter_tuning_jobs(parent=PARENT)) == []
