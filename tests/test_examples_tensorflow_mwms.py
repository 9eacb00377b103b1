"""The TensorFlow example: two real processes with our TF_CONFIG form a MWMS cluster."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from fixtures.replicas import start_replicas

from trainpool.runtime.hypertune import read_metrics

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tensorflow_mwms"
TF_PYTHON = ROOT / ".venv-tf" / "bin" / "python"


def tf_python() -> Path:
    """The TensorFlow virtualenv's interpreter (``bash scripts/setup`` makes it)."""
    if TF_PYTHON.exists():
        done = subprocess.run([str(TF_PYTHON), "-c", "import tensorflow"], capture_output=True)
        if done.returncode == 0:
            return TF_PYTHON
    pytest.skip(f"no TensorFlow virtualenv at {TF_PYTHON}: run `bash scripts/setup`")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_chief_and_worker_train_one_epoch_and_save_by_the_seed_rule(tmp_path: Path) -> None:
    python = tf_python()
    spec = {
        "workerPoolSpecs": [{"replicaCount": 1}, {"replicaCount": 1}],
        "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/tf"},
    }
    metrics = tmp_path / "m.metrics"
    command = [str(python), "-m", "trainer.task", "--epochs=1", "--batch_size=128.0"]
    procs = start_replicas(
        spec,
        command,
        workdir=tmp_path,
        example=EXAMPLE,
        metric_file=metrics,
        extra_env={"TF_CPP_MIN_LOG_LEVEL": "2"},
        stdout=subprocess.PIPE,
    )
    outputs = [p.communicate(timeout=100)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert "workerpool0-0 epoch 1" in outputs[0] and "workerpool1-0 epoch 1" in outputs[1]
    records = read_metrics(str(metrics))
    assert [(r.global_step, sorted(r.values)) for r in records] == [
        (1, ["loss"]),
        (1, ["accuracy"]),
    ]
    saved = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "gcs").rglob("*"))
    assert saved == ["gcs/bkt", "gcs/bkt/tf", "gcs/bkt/tf/model", "gcs/bkt/tf/model/model.keras"]
