"""``trainpool.redirect.point_here()`` in a process already running (a notebook's kernel):
the SDK, the gapic clients and Cloud Storage's client reach the emulator that
``VERTEX_AI_EMULATOR_HOST`` names, as under ``trainpool exec``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types import custom_job as cj

import trainpool.emulator as emulator
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(120)

NOTEBOOK = """
import json
from google.cloud import aiplatform, storage
from trainpool.redirect import point_here

point_here()
aiplatform.init(project="demo", location="us-central1")
jobs = [job.resource_name for job in aiplatform.CustomJob.list()]
buckets = [bucket.name for bucket in storage.Client(project="demo").list_buckets()]
print(json.dumps({"jobs": jobs, "buckets": buckets}))
"""


def test_point_here_points_a_running_process_at_the_named_emulator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    (root / "gcs" / "notebook-bucket").mkdir(parents=True)
    with emulator.start(root, storage=True) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        job = cj.CustomJob(
            display_name="made-before",
            job_spec={
                "worker_pool_specs": [
                    {
                        "machine_spec": {"machine_type": "n1-standard-4"},
                        "replica_count": 1,
                        "container_spec": {"image_uri": "python:3.11", "command": ["true"]},
                    }
                ]
            },
        )
        made = job_client("us-central1").create_custom_job(parent=PARENT, custom_job=job)
        env = {k: v for k, v in os.environ.items() if not k.startswith("STORAGE_EMULATOR")}
        env["VERTEX_AI_EMULATOR_HOST"] = emu.address
        done = subprocess.run(
            [sys.executable, "-c", NOTEBOOK], capture_output=True, text=True, env=env, timeout=90
        )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert made.name in seen["jobs"]
    assert "notebook-bucket" in seen["buckets"]


def test_point_here_without_an_emulator_says_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    from trainpool.redirect import point_here

    monkeypatch.delenv("VERTEX_AI_EMULATOR_HOST", raising=False)
    with pytest.raises(ValueError, match="VERTEX_AI_EMULATOR_HOST"):
        point_here()
