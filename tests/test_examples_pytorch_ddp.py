"""The PyTorch DDP example as real replica processes with cluster_env's environment."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from fixtures.replicas import start_replicas

from trainpool.runtime.hypertune import latest, read_metrics

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "pytorch_ddp"


def run_job(tmp: Path, workers: int, args: list[str], trial: str = "1") -> Path:
    """Run the trainer as primary + ``workers``; returns the trial's metric file."""
    spec: dict = {
        "workerPoolSpecs": [{"replicaCount": 1}] + ([{"replicaCount": workers}] if workers else []),
        "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/sweep"},
    }
    metrics = tmp / f"trial{trial}.metrics"
    command = [sys.executable, "-m", "trainer.task", *args]
    procs = start_replicas(
        spec, command, workdir=tmp, example=EXAMPLE, metric_file=metrics, trial_id=trial
    )
    assert [p.wait(timeout=150) for p in procs] == [0] * len(procs)
    return metrics


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_three_replicas_train_report_and_only_the_chief_writes(tmp_path: Path) -> None:
    metrics = run_job(tmp_path, 2, ["--lr=0.1", "--batch_size", "64.0"])
    records = read_metrics(str(metrics))
    assert [(r.trial, r.global_step, sorted(r.values)) for r in records] == [
        ("1", 1, ["loss"]),
        ("1", 1, ["accuracy"]),
        ("1", 2, ["loss"]),
        ("1", 2, ["accuracy"]),
    ]
    assert records[0].checkpoint_path == "gs://bkt/sweep/1/checkpoints/checkpoint.pt"
    assert latest(records, "loss") < records[0].values["loss"]
    written = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "gcs").rglob("*.pt"))
    assert written == [
        "gcs/bkt/sweep/1/checkpoints/checkpoint.pt",
        "gcs/bkt/sweep/1/model/model.pt",
    ]
    final = json.loads((tmp_path / "gcs/bkt/sweep/1/model/metrics.json").read_text())
    assert final["loss"] == pytest.approx(latest(records, "loss"))  # what the gate compares
    assert sorted(final) == ["accuracy", "loss"]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_grid_over_lr_has_a_known_best_trial(tmp_path: Path) -> None:
    """As the trainer's docstring states: with the default epochs, 0.1 < 0.01 < 0.001 on loss."""
    final = {}
    for trial, lr in enumerate(("0.001", "0.01", "0.1"), start=1):
        metrics = run_job(tmp_path, 0, [f"--lr={lr}"], trial=str(trial))
        final[lr] = latest(read_metrics(str(metrics)), "loss")
    assert final["0.1"] < final["0.01"] < final["0.001"]
    assert sorted(p.name for p in (tmp_path / "gcs" / "bkt" / "sweep").iterdir()) == ["1", "2", "3"]
