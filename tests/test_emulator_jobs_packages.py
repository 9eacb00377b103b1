"""``pythonPackageSpec`` packages installed with their dependencies, as Vertex's launcher does
(``pip3 install --user PKG`` after the ``--no-deps`` one; a real job log is quoted in
emulator/jobs/packages.py). The SDK's ``CustomTrainingJob(requirements=[...])`` puts the
requirements in the ``install_requires`` of the package it builds
(``google.cloud.aiplatform.utils.source_utils``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures.jobs import wait_job
from google.cloud import aiplatform
from google.cloud.aiplatform import training_jobs
from google.cloud.aiplatform_v1.types.job_state import JobState

from trainpool.vertex.clients import job_client

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
XGBOOST = "us-docker.pkg.dev/vertex-ai/training/xgboost-cpu.1-1:latest"
SCRIPT = """
import sys
import humanize, xgboost
print("humanize says", humanize.intcomma(1234567), "with xgboost", xgboost.__version__)
"""


@pytest.fixture
def emu(tmp_path: Path, sdk_emulator: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The SDK pointed at a fresh emulator (``sdk_emulator``), with bucket ``bkt``."""
    monkeypatch.setattr(training_jobs, "_JOB_WAIT_TIME", 0.5)
    (tmp_path / "root/gcs/bkt").mkdir(parents=True)
    return sdk_emulator


def test_sdk_requirements_are_installed_with_the_package(emu: Any, tmp_path: Path) -> None:
    script = tmp_path / "task.py"
    script.write_text(SCRIPT)
    job = aiplatform.CustomTrainingJob(
        display_name="requirements",
        script_path=str(script),
        container_uri=XGBOOST,
        requirements=["humanize"],
        project="demo",
        location="us-central1",
        staging_bucket="gs://bkt/staging",
    )
    job.run(replica_count=1, machine_type="n1-standard-4", base_output_dir="gs://bkt/out")
    assert job.state.name == "PIPELINE_STATE_SUCCEEDED"
    backing = job.gca_resource.training_task_metadata["backingCustomJob"]
    job_dir = Path(emu.root) / "jobs" / backing.rsplit("/", 1)[1]
    log = (job_dir / "workerpool0-0.log").read_text()
    assert "humanize says 1,234,567 with xgboost 1.1.1" in log
    assert "with their dependencies into" in (job_dir / "job.log").read_text()


def pinned_trainer(root: Path, tmp_path: Path, *requires: str) -> dict[str, Any]:
    """A trainer package whose setup.py pins ``requires``, staged in gs://bkt; its pool."""
    package = tmp_path / "pkg"
    (package / "trainer").mkdir(parents=True)
    (package / "trainer/__init__.py").write_text("")
    (package / "trainer/task.py").write_text("print('trained')\n")
    (package / "setup.py").write_text(
        "from setuptools import setup, find_packages\n"
        "setup(name='trainer', version='0.1', packages=find_packages(),\n"
        f"      install_requires={list(requires)!r})\n"
    )
    subprocess.run(
        [sys.executable, "setup.py", "-q", "sdist", "--dist-dir", str(root / "gcs/bkt")],
        cwd=package,
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": ""},
    )
    spec = {
        "executor_image_uri": XGBOOST,
        "package_uris": ["gs://bkt/trainer-0.1.tar.gz"],
        "python_module": "trainer.task",
    }
    return {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "python_package_spec": spec,
    }


def run_pool(pool: dict[str, Any]) -> Any:
    client = job_client("us-central1")
    created = client.create_custom_job(
        parent="projects/demo/locations/us-central1",
        custom_job={"display_name": "pins", "job_spec": {"worker_pool_specs": [pool]}},
    )
    return wait_job(client.get_custom_job, created.name, 250)


def test_a_pin_without_a_build_here_gets_the_nearest_version_that_has_one(
    emu: Any, tmp_path: Path
) -> None:
    # tensorflow-io-gcs-filesystem 0.20.0 has builds for Python 3.6 to 3.9 only, and no
    # source; 0.29.0 is the first release with one for this machine's Python 3.11
    pool = pinned_trainer(Path(emu.root), tmp_path, "tensorflow-io-gcs-filesystem==0.20.0")
    done = run_pool(pool)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error.message
    log = (Path(emu.root) / "jobs" / done.name.rsplit("/", 1)[1] / "job.log").read_text()
    assert "the requirements of ['trainer-0.1.tar.gz'] do not all install here as asked" in log
    assert (
        "  tensorflow-io-gcs-filesystem==0.20.0 (asked): 0.29.0 installed, the nearest version "
        "with a build for this machine's Python" in log
    )


def test_a_requirement_with_no_version_that_installs_fails_the_job_naming_it(
    emu: Any, tmp_path: Path
) -> None:
    # pywin32 has builds for Windows only and no source: nothing of it installs here
    done = run_pool(pinned_trainer(Path(emu.root), tmp_path, "pywin32==306"))
    assert done.state == JobState.JOB_STATE_FAILED
    message = done.error.message
    assert message.startswith("pythonPackageSpec.packageUris: pip could not install [")
    assert "with their dependencies (pywin32==306 has no version that installs here)" in message
