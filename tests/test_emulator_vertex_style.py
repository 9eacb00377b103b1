"""Trainers written for Vertex by others run unchanged on the emulator (fixtures/vertex_style).

A package with ``setup.py``/``install_requires`` built as an sdist and run through
``pythonPackageSpec`` in a sweep, reporting with ``cloudml-hypertune``, taking a dashed
argument; PyTorch's ``env://`` rendezvous from MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_image import HOST_IMAGE, host_image
from fixtures.jobs import wait_job
from fixtures.stand_ins import share_stand_ins
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(120)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "vertex_style"
MACHINE = {"machine_type": "n1-standard-4"}


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with emulator.start(share_stand_ins(tmp_path / "root")) as emu:
        host_image(emu.root)
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        yield job_client("us-central1")


def build_sdist(tmp_path: Path, bucket_dir: Path) -> None:
    """``python setup.py sdist``, as the samples build their package, into the local store."""
    source = tmp_path / "hp_package"
    shutil.copytree(FIXTURES / "hp_package", source)
    subprocess.run(
        [sys.executable, "setup.py", "-q", "sdist", "--dist-dir", str(bucket_dir)],
        cwd=source,
        check=True,
        capture_output=True,
    )


def test_an_sdist_with_install_requires_and_hypertune_runs_a_sweep(
    client: Any, tmp_path: Path
) -> None:
    build_sdist(tmp_path, tmp_path / "root/gcs/bkt/pkgs")
    package = {
        "executor_image_uri": "us-docker.pkg.dev/vertex-ai/training/xgboost-cpu.1-1:latest",
        "package_uris": ["gs://bkt/pkgs/trainer-0.1.tar.gz"],
        "python_module": "trainer.task",
        "args": ["--boost-rounds=5"],
    }
    sweep = {
        "display_name": "samples-style",
        "max_trial_count": 3,
        "parallel_trial_count": 3,
        "study_spec": {
            "metrics": [{"metric_id": "accuracy", "goal": "MAXIMIZE"}],
            "parameters": [
                {
                    "parameter_id": "learning_rate",
                    "discrete_value_spec": {"values": [0.01, 0.1, 0.3]},
                }
            ],
            "algorithm": "GRID_SEARCH",
        },
        "trial_job_spec": {
            "worker_pool_specs": [
                {"replica_count": 1, "machine_spec": MACHINE, "python_package_spec": package}
            ]
        },
    }
    created = client.create_hyperparameter_tuning_job(
        parent=PARENT, hyperparameter_tuning_job=sweep
    )
    done = wait_job(client.get_hyperparameter_tuning_job, created.name, 100, poll_s=0.1)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    results = {
        t.parameters[0].value: (
            t.final_measurement.metrics[0].value,
            t.final_measurement.step_count,
        )
        for t in done.trials
    }
    assert results == {
        0.01: (pytest.approx(5 * 0.91), 5),
        0.1: (pytest.approx(5.0), 5),
        0.3: (pytest.approx(5 * 0.8), 5),
    }


def test_pytorch_env_rendezvous_across_three_replicas(client: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, str(FIXTURES / "ddp_env.py"), f"--out-dir={out}"]
    container = {"image_uri": HOST_IMAGE, "command": command}
    pools = [
        {"replica_count": n, "machine_spec": MACHINE, "container_spec": container} for n in (1, 2)
    ]
    job = {"display_name": "env-rendezvous", "job_spec": {"worker_pool_specs": pools}}
    created = client.create_custom_job(parent=PARENT, custom_job=job)
    done = wait_job(client.get_custom_job, created.name, 100)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    results = sorted(p.read_text() for p in out.glob("rank*.txt"))
    assert results == ["3 6.0 127.0.0.1"] * 3
