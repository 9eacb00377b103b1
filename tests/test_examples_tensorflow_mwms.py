"""The TensorFlow example: two real processes with our TF_CONFIG form a MWMS cluster."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from trainpool.cluster_env import build_env, local_hosts
from trainpool.cluster_env.layout import replicas
from trainpool.runtime.hypertune import read_metrics

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tensorflow_mwms"
PYTHONS = [ROOT / ".venv-tf" / "bin" / "python", Path("/tmp/tfvenv/bin/python")]


def tf_python() -> Path:
    for python in PYTHONS:
        done = subprocess.run([str(python), "-c", "import tensorflow"], capture_output=True)
        if python.exists() and done.returncode == 0:
            return python
    pytest.skip(f"no TensorFlow virtualenv at {[str(p) for p in PYTHONS]} (scripts/setup makes it)")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_chief_and_worker_train_one_epoch_and_save_by_the_seed_rule(tmp_path: Path) -> None:
    python = tf_python()
    spec = {
        "workerPoolSpecs": [{"replicaCount": 1}, {"replicaCount": 1}],
        "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/tf"},
    }
    hosts = local_hosts(spec)
    metrics = tmp_path / "m.metrics"
    procs = []
    for pool, index in replicas(spec):
        env = build_env(
            spec,
            pool,
            index,
            hosts=hosts,
            job_id="1",
            project="p",
            region="r",
            metric_file=str(metrics),
        )
        child = (
            os.environ
            | env
            | {
                "TRAINPOOL_GCS_ROOT": str(tmp_path / "gcs"),
                "PYTHONPATH": f"{EXAMPLE}{os.pathsep}{ROOT}",
                "TF_CPP_MIN_LOG_LEVEL": "2",
            }
        )
        command = [str(python), "-m", "trainer.task", "--epochs=1", "--batch_size=128.0"]
        procs.append(subprocess.Popen(command, env=child, cwd=tmp_path, stdout=subprocess.PIPE))
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
