"""The Keras ``fit`` example: a real two-process MultiWorkerMirroredStrategy job on the emulator.

The chief's model is saved where the seed (002, Google's multi-worker article) says: the
chief to AIP_MODEL_DIR, the worker to a workertemp_<id> directory it deletes afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.jobs import wait_job
from google.cloud.aiplatform_v1.types.job_state import JobState
from test_examples_tensorflow_mwms import tf_python

import trainpool.emulator as emulator
from trainpool.vertex.clients import job_client

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tensorflow_keras_fit"


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_fit_trains_across_two_processes_and_the_chief_saves_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = tf_python()
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {
            "image_uri": "local/none",
            "command": [str(python), "-m", "trainer.task", "--epochs=2", "--batch-size=128"],
            # the image's ENV (Dockerfile): its code and trainpool's runtime on the path
            "env": [
                {"name": "PYTHONPATH", "value": f"{EXAMPLE}:{ROOT}"},
                {"name": "TF_CPP_MIN_LOG_LEVEL", "value": "2"},
            ],
        },
    }
    spec = {
        "worker_pool_specs": [pool, pool],
        "base_output_directory": {"output_uri_prefix": "gs://bkt/fit"},
    }
    with emulator.start(tmp_path / "root") as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        job = {"display_name": "keras-fit", "job_spec": spec}
        created = client.create_custom_job(
            parent="projects/demo/locations/us-central1", custom_job=job
        )
        done = wait_job(client.get_custom_job, created.name, 170)
    job_dir = tmp_path / "root/jobs" / created.name.rsplit("/", 1)[-1]
    logs = {n: (job_dir / f"{n}.log").read_text() for n in ("workerpool0-0", "workerpool1-0")}
    assert done.state == JobState.JOB_STATE_SUCCEEDED, (done.error.message, logs)
    for log in logs.values():
        assert "Epoch 2/2" in log
    model = tmp_path / "root/gcs/bkt/fit/model"
    assert (model / "saved_model.pb").is_file()
    assert "chief-0 saved to" in logs["workerpool0-0"]
    assert "worker-0 saved to" in logs["workerpool1-0"]
    assert sorted(p.name for p in model.parent.iterdir()) == ["model"]  # workertemp_0 removed
