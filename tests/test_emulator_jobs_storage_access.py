"""Cloud Storage inside a replica as on Vertex: the client library, gcloud and /gcs, unchanged
(emulator/jobs/storage_access.py; google-cloud-storage honours STORAGE_EMULATOR_HOST,
gcloud its documented endpoint override and ``auth/disable_credentials``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_image import HOST_IMAGE, host_image
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.emulator.jobs.storage_access import NO_DOOR_NOTE, storage_env
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(120)

# What trainers written for Vertex do: the client library with no arguments, the Cloud SDK.
TRAINER = """
import json, os, subprocess, sys
from google.cloud import storage
client = storage.Client()
text = client.bucket("bkt").blob("in/data.txt").download_as_text()
client.bucket("bkt").blob("out/from-client.txt").upload_from_string(text.upper())
def gcloud(*args):
    return subprocess.run(["gcloud", "storage", *args], capture_output=True, text=True, check=True)
cat = gcloud("cat", "gs://bkt/in/data.txt").stdout
listed = gcloud("ls", "gs://bkt/in/").stdout.split()
gcloud("cp", "gs://bkt/in/data.txt", "copied.txt")
seen = {k: os.environ.get(k) for k in ("STORAGE_EMULATOR_HOST", "CLOUDSDK_CONFIG",
        "CLOUDSDK_CORE_PROJECT", "GOOGLE_CLOUD_PROJECT", "CLOUD_ML_PROJECT_ID", "HOME")}
json.dump({"cat": cat, "ls": listed, "copied": open("copied.txt").read(), "env": seen,
           "cwd": os.getcwd()}, open(sys.argv[1], "w"))
"""


def run(client: Any, argv: list[str]) -> Any:
    container = {"image_uri": HOST_IMAGE, "command": argv}
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": container,
    }
    created = client.create_custom_job(
        parent=PARENT, custom_job={"display_name": "gcs", "job_spec": {"worker_pool_specs": [pool]}}
    )
    return wait_job(client.get_custom_job, created.name, 100)


def test_client_library_and_gcloud_reach_the_storage_door_with_no_code_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    (root / "gcs/bkt/in").mkdir(parents=True)
    (root / "gcs/bkt/in/data.txt").write_text("rows\n")
    (tmp_path / "trainer.py").write_text(TRAINER)
    out = tmp_path / "seen.json"
    with emulator.start(root, storage=True) as emu:
        host_image(emu.root)
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        done = run(
            job_client("us-central1"), [sys.executable, str(tmp_path / "trainer.py"), str(out)]
        )
        door = emu.storage_address
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    seen = json.loads(out.read_text())
    assert seen["cat"] == seen["copied"] == "rows\n"
    assert seen["ls"] == ["gs://bkt/in/data.txt"]
    assert (root / "gcs/bkt/out/from-client.txt").read_text() == "ROWS\n"
    env = seen["env"]
    assert env["STORAGE_EMULATOR_HOST"] == door
    # the replica's own gcloud configuration, pointed at the emulator's REST door and
    # proxy as under trainpool exec (vertex_access.https_env), outside its emptied HOME
    job_id = done.name.rsplit("/", 1)[1]
    assert env["CLOUDSDK_CONFIG"] == str(root / "jobs" / job_id / "gcloud" / "workerpool0-0")
    assert env["CLOUDSDK_CORE_PROJECT"] == env["CLOUD_ML_PROJECT_ID"] == "demo"
    assert env["GOOGLE_CLOUD_PROJECT"] is None  # Vertex is not known to set it


def test_without_a_door_the_job_log_says_only_gcs_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with emulator.start(tmp_path / "root", storage=False) as emu:
        host_image(emu.root)
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        done = run(job_client("us-central1"), [sys.executable, "-c", "pass"])
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    log = (tmp_path / "root/jobs" / done.name.rsplit("/", 1)[1] / "job.log").read_text()
    assert NO_DOOR_NOTE in log


def test_the_variables_given_to_replicas(tmp_path: Path) -> None:
    door = {
        "STORAGE_EMULATOR_HOST": "http://127.0.0.1:9/s3cret",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": "http://127.0.0.1:9/",
        "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE": "/root/storage.token",
    }
    assert storage_env({}, "p", tmp_path) == {}
    assert storage_env(door, "p", tmp_path) == {
        **door,
        "CLOUDSDK_CORE_PROJECT": "p",
        "CLOUDSDK_CONFIG": str(tmp_path / ".config/gcloud"),
        "CLOUDSDK_CORE_CHECK_GCE_METADATA": "false",
        "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
    }
