"""Google's public sample trainers (fixtures/google_samples) run on the emulator as on Vertex.

Each fixture behaves as a sample of GoogleCloudPlatform/vertex-ai-samples @cc0d791 (its
README names the notebook and the differences); each is launched as its notebook
launches it, with the unchanged ``google-cloud-aiplatform`` SDK over real gRPC, reads its
data through Cloud Storage (``gcloud storage`` or the client library, through the
emulator's storage door) and writes its model where Vertex says.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures.samples import SAMPLES, boston_like, pack, put
from google.cloud import aiplatform
from google.cloud.aiplatform import hyperparameter_tuning as hpt
from google.cloud.aiplatform import jobs, training_jobs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

BUCKET = "gs://sample-bucket"
XGBOOST_IMAGE = "us-docker.pkg.dev/vertex-ai/training/xgboost-cpu.1-1:latest"


@pytest.fixture
def emu(sdk_emulator: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The emulator with its Cloud Storage door, the SDK pointed at it (``sdk_emulator``)."""
    monkeypatch.setattr(jobs, "_JOB_WAIT_TIME", 0.5)
    monkeypatch.setattr(training_jobs, "_JOB_WAIT_TIME", 0.5)
    return sdk_emulator


def iris_like(rows: int = 40) -> tuple[bytes, bytes]:
    """Features and labels as the sample's iris CSVs are read: a header line, then rows."""
    data, labels = io.StringIO(), io.StringIO()
    features = csv.writer(data, lineterminator="\n")
    targets = csv.writer(labels, lineterminator="\n")
    features.writerow(["sepal_length", "sepal_width", "petal_length", "petal_width"])
    targets.writerow(["species"])
    for i in range(rows):
        kind = i % 3
        wobble = (i * 7 % 5) / 10
        features.writerow([5 + kind + wobble, 3 + wobble, 1 + 2 * kind + wobble, kind + wobble])
        targets.writerow([kind])
    return data.getvalue().encode(), labels.getvalue().encode()


def test_xgboost_hpt_sample_on_its_prebuilt_image_tunes_six_trials(emu: Any) -> None:
    root = Path(emu.root)
    data, labels = iris_like()
    put(root, "gs://cloud-samples-data/ai-platform/iris/iris_data.csv", data)
    put(root, "gs://cloud-samples-data/ai-platform/iris/iris_target.csv", labels)
    put(root, f"{BUCKET}/trainer_iris.tar.gz", pack(SAMPLES / "xgboost_hpt", "custom"))
    dataset = "gs://cloud-samples-data/ai-platform/iris"
    worker_pool_spec = [
        {
            "replica_count": 1,
            "machine_spec": {"machine_type": "n1-standard-4", "accelerator_count": 0},
            "disk_spec": {"boot_disk_type": "pd-ssd", "boot_disk_size_gb": 100},
            "python_package_spec": {
                "executor_image_uri": XGBOOST_IMAGE,
                "package_uris": [f"{BUCKET}/trainer_iris.tar.gz"],
                "python_module": "trainer.task",
                "args": [
                    f"--dataset-data-url={dataset}/iris_data.csv",
                    f"--dataset-labels-url={dataset}/iris_target.csv",
                ],
            },
        }
    ]
    model_dir = f"{BUCKET}/aiplatform-custom-job"
    job = aiplatform.CustomJob(
        display_name="iris",
        worker_pool_specs=worker_pool_spec,
        base_output_dir=model_dir,
        staging_bucket=BUCKET,  # the notebook's aiplatform.init(staging_bucket=BUCKET_URI)
        project="demo",
        location="us-central1",
    )
    tuning = aiplatform.HyperparameterTuningJob(
        display_name="iris",
        custom_job=job,
        metric_spec={"accuracy": "maximize"},
        parameter_spec={"boost-rounds": hpt.IntegerParameterSpec(min=10, max=100, scale="linear")},
        search_algorithm=None,
        max_trial_count=6,
        parallel_trial_count=3,  # the notebook runs 1 at a time; 3 keeps the test short
        project="demo",
        location="us-central1",
    )
    tuning.run()
    assert tuning.state.name == "JOB_STATE_SUCCEEDED", tuning.gca_resource.error
    trials = tuning.trials
    assert len(trials) == 6
    job_dir = root / "jobs" / tuning.resource_name.rsplit("/", 1)[-1]
    for trial in trials:
        assert trial.state.name == "SUCCEEDED", trial.infeasible_reason
        rounds = trial.parameters[0].value
        assert rounds == int(rounds) and 10 <= rounds <= 100
        assert 0.0 <= trial.final_measurement.metrics[0].value <= 1.0
        model = root / "gcs/sample-bucket/aiplatform-custom-job" / trial.id / "model"
        assert (model / "model.bst").stat().st_size > 0
        assert (model / "metrics.json").read_text().startswith("accuracy: ")
        files = job_dir / f"trial-{trial.id}"
        log = (files / "workerpool0-0.log").read_text()
        assert f"boost rounds {int(rounds)}: accuracy" in log  # parsed with type=int
        # the CSVs landed in the replica's own working directory, not anywhere shared
        assert (files / "work/workerpool0-0/data.csv").read_bytes() == data
    trial_log = (job_dir / "trial-1" / "job.log").read_text()
    assert f"{XGBOOST_IMAGE} (xgboost 1.1, Python 3.7 on Vertex) runs in" in trial_log
    assert "xgboost 1.1.1 (as on Vertex: 1.1.1)" in trial_log


def build_image(root: Path, folder: Path, image: str) -> str:
    """``trainpool build-image FOLDER --local --image REPO:latest``, as a user tags it."""
    cli = "from trainpool.cli import main; main()"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            cli,
            "build-image",
            str(folder),
            "--local",
            "--image",
            image,
            "--json",
        ],
        env={**os.environ, "TRAINPOOL_HOME": str(root)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["imageUri"])


def mnist_like(rows: int = 256) -> bytes:
    import torch

    generator = torch.Generator().manual_seed(0)
    labels = torch.arange(rows) % 10
    pixels = torch.rand(rows, 1, 28, 28, generator=generator) * 0.1
    pixels[torch.arange(rows), 0, labels, :] += 1.0  # a learnable stripe per digit
    out = io.BytesIO()
    torch.save({"x": pixels, "y": labels}, out)
    return out.getvalue()


def test_pytorch_ddp_gloo_custom_container_runs_on_four_replicas(emu: Any) -> None:
    root = Path(emu.root)
    put(root, f"{BUCKET}/data/mnist-small.pt", mnist_like())
    image = "us-central1-docker.pkg.dev/demo/samples/pytorch-ddp-gloo:latest"
    built = build_image(root, SAMPLES / "pytorch_ddp_gloo", image)
    assert built.startswith(f"{image}@sha256:")
    job = aiplatform.CustomContainerTrainingJob(
        display_name="ddp-gloo",
        container_uri=image,  # the tag, as the notebook passes it
        project="demo",
        location="us-central1",
        staging_bucket=BUCKET,
    )
    args = ["--backend", "gloo", "--no-cuda", "--batch-size", "128", "--epochs", "2"]
    job.run(
        args=args,
        base_output_dir=f"{BUCKET}/ddp-gloo",
        replica_count=4,
        machine_type="n1-standard-4",
    )
    assert job.state.name == "PIPELINE_STATE_SUCCEEDED"
    backing = job.gca_resource.training_task_metadata["backingCustomJob"]
    job_dir = root / "jobs" / backing.rsplit("/", 1)[1]
    names = ["workerpool0-0", "workerpool1-0", "workerpool1-1", "workerpool1-2"]
    for rank, name in enumerate(names):
        log = (job_dir / f"{name}.log").read_text()
        assert f"rank {rank}/4 epoch 2" in log, log
        if rank:
            assert f"rank {rank} loaded /gcs/sample-bucket/ddp-gloo/checkpoints/" in log
        # ./tmp/data is each replica's own, in its own copy of the image's files
        assert (job_dir / "work" / name / "tmp/data/mnist.pt").is_file()
    out = root / "gcs/sample-bucket/ddp-gloo"
    assert sorted(p.name for p in (out / "logs").iterdir()) == [
        f"events.rank{r}.txt" for r in range(4)
    ]
    assert list((out / "checkpoints").iterdir()) == []  # the chief removed its checkpoint
    assert not (out / "model").exists()  # the sample saves a model only in local mode
    stored = sorted(
        p.name for p in (root / "images" / built.rsplit(":", 1)[1] / "context").iterdir()
    )
    assert stored == ["Dockerfile", "requirements.txt", "task.py"]


TF_IMAGE = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8:latest"


def test_tensorflow_multiworker_sample_on_its_prebuilt_image(emu: Any) -> None:
    root = Path(emu.root)
    put(root, f"{BUCKET}/data/boston_housing.npz", boston_like())
    put(root, f"{BUCKET}/trainer_boston.tar.gz", pack(SAMPLES / "tf_mwms", "custom"))
    job = aiplatform.CustomPythonPackageTrainingJob(
        display_name="boston",
        python_package_gcs_uri=f"{BUCKET}/trainer_boston.tar.gz",
        python_module_name="trainer.task",
        container_uri=TF_IMAGE,
        project="demo",
        location="us-central1",
        staging_bucket=BUCKET,
    )
    # the notebook's multi-worker run (it asks for 4 replicas; 2 keep the test short), and a
    # relative --param-file: the sample's /tmp/param.txt would be this machine's /tmp
    args = ["--epochs=5", "--batch_size=16", "--distribute=multiworker", "--param-file=param.txt"]
    job.run(
        args=args,
        replica_count=2,
        machine_type="n1-standard-4",
        base_output_dir=f"{BUCKET}/boston",
    )
    assert job.state.name == "PIPELINE_STATE_SUCCEEDED"
    backing = job.gca_resource.training_task_metadata["backingCustomJob"]
    job_dir = root / "jobs" / backing.rsplit("/", 1)[1]
    chief = (job_dir / "workerpool0-0.log").read_text()
    assert "num_replicas_in_sync = 2" in chief
    assert "chief saved the model to /gcs/sample-bucket/boston/model/" in chief
    worker = (job_dir / "workerpool1-0.log").read_text()
    assert "worker 0 saved to /gcs/sample-bucket/boston/model/workertemp_0" in worker
    model = root / "gcs/sample-bucket/boston/model"
    assert (model / "saved_model.pb").is_file()
    assert (model / "workertemp_0/saved_model.pb").is_file()
    for name in ("workerpool0-0", "workerpool1-0"):
        assert "'distribute': 'multiworker'" in (job_dir / "work" / name / "param.txt").read_text()
    log = (job_dir / "job.log").read_text()
    assert f"{TF_IMAGE} (tensorflow 2.8, Python 3.7 on Vertex) runs in" in log
    assert "tensorflow-cpu 2.12.1 (Vertex has 2.8, which has no build for Python" in log
    # the sample's install_requires pin what the image has; they are resolved as the
    # image's framework is, and the job log says what was asked and what was installed
    assert "do not all install here as asked" in log
    assert (
        "  tensorflow==2.8.0 (asked): tensorflow-cpu 2.12.1 of the image's stand-in stands in "
        "for it" in log
    )
    datasets = [line for line in log.splitlines() if "tensorflow_datasets==1.3.0" in line]
    assert datasets, log
