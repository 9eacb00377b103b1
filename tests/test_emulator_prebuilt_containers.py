"""Google's own images as bases, on a real engine (``stand_ins/prebuilt_bases.py``).

Google's TensorFlow hyperparameter-tuning notebook (vertex-ai-samples, "Hyperparameter tuning
with TensorFlow": its Dockerfile cell) builds its trainer ``FROM
gcr.io/deeplearning-platform-release/tf2-gpu.2-8``, ``WORKDIR /``, ``RUN pip install
cloudml-hypertune``, ``COPY trainer /trainer``, ``ENTRYPOINT ["python", "-m", "trainer.task"]``,
with ``gcloud builds submit --tag``, then runs it as a sweep whose trials report with
hypertune. Google's PyTorch notebook reads its CSV with ``pd.read_csv("gs://...")``
(gcsfs). Where Google's registries cannot be reached, the base is a stand-in built here:
TensorFlow 2.8 on Python 3.9 (2.8 publishes no wheel for 3.11), pandas and gcsfs.
Skipped, saying why, where no engine answers or the package index cannot be reached.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from fixtures.jobs import wait_job
from fixtures.samples import SAMPLES, boston_like, put
from fixtures.shell import docker_repository, gcloud, needs_gcloud, ok
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.emulator.jobs.containers import ContainerEngine
from trainpool.vertex.clients import job_client

BASE = "gcr.io/deeplearning-platform-release/tf2-gpu.2-8"
DOCKERFILE = f"""\
FROM {BASE}
WORKDIR /
RUN pip install cloudml-hypertune
COPY trainer /trainer
ENTRYPOINT ["python", "-m", "trainer.task"]
"""
TASK = """\
import argparse, os

import hypertune
import numpy as np
import pandas as pd
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--learning_rate", type=float, required=True)
parser.add_argument("--data", required=True)
args = parser.parse_args()
frame = pd.read_csv(args.data)  # gs://, through gcsfs
features = frame[["x"]].to_numpy(dtype="float32")
labels = frame["y"].to_numpy(dtype="float32")
model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(1,))])
model.compile(optimizer=tf.keras.optimizers.SGD(args.learning_rate), loss="mse")
history = model.fit(features, labels, epochs=3, verbose=0)
trial = os.environ["CLOUD_ML_TRIAL_ID"]
print("TF", tf.__version__, "ROWS", len(frame), "TRIAL", trial, flush=True)
# google-cloud-storage as a trainer on Vertex calls it: no project, no endpoint given
from google.cloud import storage
storage.Client().bucket("bkt").blob(f"out/{trial}.txt").upload_from_string(str(len(frame)))
loss = float(history.history["loss"][-1])
hypertune.HyperTune().report_hyperparameter_tuning_metric(
    hyperparameter_metric_tag="loss", metric_value=loss, global_step=3
)
"""


def sweep(client: Any, image: str) -> Any:
    """A 2-trial GRID sweep over the learning rate, run to its end."""
    spec = {
        "display_name": "tf-hpt",
        "max_trial_count": 2,
        "parallel_trial_count": 2,
        "study_spec": {
            "metrics": [{"metric_id": "loss", "goal": "MINIMIZE"}],
            "parameters": [
                {"parameter_id": "learning_rate", "discrete_value_spec": {"values": [0.01, 0.1]}}
            ],
            "algorithm": "GRID_SEARCH",
        },
        "trial_job_spec": {
            "worker_pool_specs": [
                {
                    "replica_count": 1,
                    "machine_spec": {"machine_type": "n1-standard-4"},
                    "container_spec": {"image_uri": image, "args": ["--data=gs://bkt/data.csv"]},
                }
            ]
        },
    }
    made = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=spec)
    return wait_job(client.get_hyperparameter_tuning_job, made.name, 600)


@needs_gcloud
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_tensorflow_notebooks_dockerfile_builds_on_a_stand_in_and_runs_as_a_sweep(
    emu: emulator.Emulator, engine: ContainerEngine, python_base: str, tmp_path: Path
) -> None:
    # python_base: the Debian stand-ins can be made here (mmdebstrap), else this skips
    source = tmp_path / "source"
    (source / "trainer").mkdir(parents=True)
    (source / "trainer" / "__init__.py").write_text("")
    (source / "trainer" / "task.py").write_text(TASK)
    (source / "Dockerfile").write_text(DOCKERFILE)
    data = emu.root / "gcs" / "bkt" / "data.csv"
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text("x,y\n" + "".join(f"{x},{2 * x + 1}\n" for x in range(8)))
    image = "us-central1-docker.pkg.dev/demo/trainers/tf-hpt:1"
    docker_repository(emu, "trainers")
    built = gcloud(emu, "builds", "submit", "--tag", image, str(source), timeout=900)
    said = built.stdout + built.stderr
    if built.returncode != 0 and "pip" in said and "Could not" in said:
        pytest.skip(f"the package index cannot be reached from a container here: {said[-1500:]}")
    assert built.returncode == 0, said[-4000:]
    assert "Step 3/5 : RUN pip install cloudml-hypertune" in said  # every step runs
    if engine.image(BASE) is not None and "cannot be pulled here" in said:
        assert f"FROM {BASE}: the stand-in made on this machine is tagged {BASE}" in said
    client = job_client("us-central1")
    done = sweep(client, image)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    losses = sorted(t.final_measurement.metrics[0].value for t in done.trials)
    assert len(losses) == 2 and all(loss >= 0 for loss in losses)
    job_id = done.name.rsplit("/", 1)[1]
    for trial in done.trials:
        folder = emu.root / "jobs" / job_id / f"trial-{trial.id}"
        printed = (folder / "workerpool0-0.log").read_text()
        assert f"TF 2.8.4 ROWS 8 TRIAL {trial.id}" in printed, printed[-2000:]
        log = (folder / "job.log").read_text()
        assert f"is built on the stand-in of {BASE}" in log  # said, never silent
        assert (emu.root / "gcs" / "bkt" / "out" / f"{trial.id}.txt").read_text() == "8"
    listed = json.loads(
        ok(
            gcloud(
                emu,
                "artifacts",
                "docker",
                "images",
                "list",
                "us-central1-docker.pkg.dev/demo/trainers",
                "--format=json",
            )
        )
    )
    assert [i["package"] for i in listed] == ["us-central1-docker.pkg.dev/demo/trainers/tf-hpt"]


TF_CPU = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8:latest"
PACKAGE_TASK = """\
import sys

import tensorflow as tf

print("PACKAGE TF", tf.__version__, "PY", sys.version_info[:2], "ARGS", sys.argv[1:], flush=True)
"""


def sdist(folder: Path, trainer: Path | None = None) -> Path:
    """``python setup.py sdist`` of a package ``trainer`` (:data:`PACKAGE_TASK`, or a copy of
    the folder ``trainer``), as Google's samples make the package a pythonPackageSpec names."""
    if trainer is None:
        (folder / "trainer").mkdir(parents=True)
        (folder / "trainer" / "__init__.py").write_text("")
        (folder / "trainer" / "task.py").write_text(PACKAGE_TASK)
    else:
        shutil.copytree(trainer, folder / "trainer", ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "setup.py").write_text(
        "from setuptools import find_packages, setup\n"
        "setup(name='trainer', version='0.1', packages=find_packages())\n"
    )
    import subprocess
    import sys

    subprocess.run(
        [sys.executable, "setup.py", "-q", "sdist", "--formats=gztar"],
        cwd=folder,
        check=True,
        capture_output=True,
    )
    return folder / "dist" / "trainer-0.1.tar.gz"


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_jobs_naming_tf_cpu_2_8_run_in_its_container_stand_in_as_vertex_runs_them(
    emu: emulator.Emulator, engine: ContainerEngine, python_base: str, tmp_path: Path
) -> None:
    # the distributed-training notebook's TensorFlow 2.8 job failed in the process stand-in
    # (TensorFlow 2.8's packages on a Python it was never built for); in a container of the
    # image's stand-in it runs TensorFlow 2.8 on Python 3.9. A containerSpec naming the image
    # runs its command there; a pythonPackageSpec naming it as executorImageUri installs the
    # package at each replica's start and runs python -m MODULE ARGS (PythonPackageSpec,
    # custom_job.proto)
    package = sdist(tmp_path / "package")
    stored = emu.root / "gcs" / "bkt" / "packages" / package.name
    stored.parent.mkdir(parents=True, exist_ok=True)
    stored.write_bytes(package.read_bytes())
    machine = {"machine_type": "n1-standard-4"}
    command = "import sys, tensorflow as tf; print('TF', tf.__version__, sys.version_info[:2])"
    jobs = {
        "container": {
            "replica_count": 1,
            "machine_spec": machine,
            "container_spec": {"image_uri": TF_CPU, "command": ["python3", "-c", command]},
        },
        "package": {
            "replica_count": 1,
            "machine_spec": machine,
            "python_package_spec": {
                "executor_image_uri": TF_CPU,
                "package_uris": ["gs://bkt/packages/trainer-0.1.tar.gz"],
                "python_module": "trainer.task",
                "args": ["--epochs=1"],
            },
        },
    }
    client = job_client("us-central1")
    made = {
        name: client.create_custom_job(
            parent=PARENT,
            custom_job={"display_name": name, "job_spec": {"worker_pool_specs": [pool]}},
        )
        for name, pool in jobs.items()
    }
    printed = {}
    for name, job in made.items():
        folder = emu.root / "jobs" / job.name.rsplit("/", 1)[1]
        done = wait_job(client.get_custom_job, job.name, 900, logs=folder)
        assert done.state == JobState.JOB_STATE_SUCCEEDED, (name, done.error)
        printed[name] = (folder / "workerpool0-0.log").read_text()
        log = (folder / "job.log").read_text()
        assert f"each replica is a container of {TF_CPU}" in log
        assert f"is built on the stand-in of {TF_CPU}" in log  # said, never silent
    assert "TF 2.8.4 (3, 9)" in printed["container"]
    assert "PACKAGE TF 2.8.4 PY (3, 9) ARGS ['--epochs=1']" in printed["package"]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_googles_multiworker_sample_trains_across_three_containers_of_tf_cpu_2_8(
    emu: emulator.Emulator, engine: ContainerEngine, python_base: str, tmp_path: Path
) -> None:
    # Google's distributed-training sample (fixtures/google_samples/tf_mwms) as a chief and 2
    # workers, each a container of tf-cpu.2-8's stand-in (made by the test above, else here),
    # forming one MultiWorkerMirroredStrategy cluster from the TF_CONFIG Vertex gives each
    # replica ("Distributed training": TF_CONFIG's cluster and task), over the engine's
    # network. Its package as the notebook makes it, less its install_requires: they pin
    # tensorflow==2.8.0, which pip would download into each container of a stand-in that
    # holds tensorflow-cpu 2.8.4
    package = sdist(tmp_path / "package", SAMPLES / "tf_mwms" / "trainer")
    put(emu.root, "gs://sample-bucket/packages/trainer-0.1.tar.gz", package.read_bytes())
    put(emu.root, "gs://sample-bucket/data/boston_housing.npz", boston_like())
    args = ["--epochs=2", "--batch_size=16", "--distribute=multiworker", "--param-file=param.txt"]
    spec = {
        "worker_pool_specs": [
            {
                "replica_count": count,
                "machine_spec": {"machine_type": "n1-standard-4"},
                "python_package_spec": {
                    "executor_image_uri": TF_CPU,
                    "package_uris": ["gs://sample-bucket/packages/trainer-0.1.tar.gz"],
                    "python_module": "trainer.task",
                    "args": args,
                },
            }
            for count in (1, 2)
        ],
        "base_output_directory": {"output_uri_prefix": "gs://sample-bucket/boston"},
        # a TF 2.8 worker sometimes ends 139 (SIGSEGV) in its teardown, after its model is
        # saved; restarted alone, as Vertex restarts a failed replica, it waits for a cluster
        # nobody joins ("Waiting for the cluster, timeout = inf"). Vertex's remedy for jobs
        # "not resilient to workers leaving and joining" (Scheduling, custom_job.proto):
        # restart every replica, so the cluster forms again
        "scheduling": {"restart_job_on_worker_restart": True},
    }
    client = job_client("us-central1")
    made = client.create_custom_job(
        parent=PARENT, custom_job={"display_name": "boston", "job_spec": spec}
    )
    folder = emu.root / "jobs" / made.name.rsplit("/", 1)[1]
    done = wait_job(client.get_custom_job, made.name, 800, logs=folder)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    chief = (folder / "workerpool0-0.log").read_text()
    assert "num_replicas_in_sync = 3" in chief, chief[-3000:]
    assert "chief saved the model to /gcs/sample-bucket/boston/model/" in chief
    for index in (0, 1):
        worker = (folder / f"workerpool1-{index}.log").read_text()
        assert "num_replicas_in_sync = 3" in worker, worker[-3000:]
        assert f"worker {index} saved to /gcs/sample-bucket/boston/model/workertemp_{index}" in (
            worker
        )
    model = emu.root / "gcs" / "sample-bucket" / "boston" / "model"
    assert (model / "saved_model.pb").is_file()
    assert (model / "workertemp_1" / "saved_model.pb").is_file()
    log = (folder / "job.log").read_text()
    assert f"each replica is a container of {TF_CPU}" in log
