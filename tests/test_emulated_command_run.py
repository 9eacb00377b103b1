"""``trainpool exec -- COMMAND``: code written for Vertex AI runs unchanged against the emulator.

The scripts in tests/fixtures/user_code import only Google's libraries (checked below);
under ``trainpool exec`` every client they make reaches the local emulator and its store.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.host_image import host_image
from fixtures.pipelines import compile_fixture
from fixtures.processes import signal_other_thread

import trainpool.emulator as emulator
from trainpool.config import EMULATOR_ENV

pytestmark = pytest.mark.timeout(240)
USER_CODE = Path(__file__).parent / "fixtures" / "user_code"
CLI = [sys.executable, "-c", "from trainpool.cli import main; main()"]


def trainpool_exec(
    *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in (env or os.environ).items()
        if k not in (EMULATOR_ENV, "STORAGE_EMULATOR_HOST")
    }
    if env is not None:
        clean.update({k: v for k, v in env.items() if k in (EMULATOR_ENV, "STORAGE_EMULATOR_HOST")})
    return subprocess.run(
        [*CLI, "exec", *args], capture_output=True, text=True, env=clean, timeout=200
    )


def lines(output: str) -> dict[str, dict[str, object]]:
    found = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    return {entry.get("flow", "result"): entry for entry in found}


def test_the_user_scripts_never_import_trainpool() -> None:
    for script in USER_CODE.glob("*.py"):
        assert not re.search(r"^\s*(import|from)\s+trainpool", script.read_text(), re.M), script


def test_sdk_flows_run_unchanged(tmp_path: Path) -> None:
    flows = [
        "storage",
        "custom_job",
        "training_job",
        "container_training_job",
        "tuning_job",
        "model_upload",
    ]
    # the sweep's trials import cloudml-hypertune: a local image that has it runs them
    image = host_image(tmp_path / "root")
    done = trainpool_exec(
        "--root",
        str(tmp_path / "root"),
        "--",
        sys.executable,
        str(USER_CODE / "sdk_flows.py"),
        *flows,
        env={**os.environ, "TRIAL_IMAGE": image},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = lines(done.stdout)
    assert seen["storage"]["text"] == "hello from a user script"
    assert seen["custom_job"] == {
        "flow": "custom_job",
        "state": "JOB_STATE_SUCCEEDED",
        "pools": [1, 2],
    }
    assert seen["training_job"]["state"] == "PIPELINE_STATE_SUCCEEDED"
    assert seen["container_training_job"]["state"] == "PIPELINE_STATE_SUCCEEDED"
    assert seen["tuning_job"] == {"flow": "tuning_job", "state": "JOB_STATE_SUCCEEDED", "trials": 3}
    assert str(seen["model_upload"]["name"]).startswith(
        "projects/demo/locations/us-central1/models/"
    )
    assert (tmp_path / "root" / "gcs" / "demo-staging" / "notes" / "hello.txt").is_file()
    assert "Traceback" not in done.stderr


def test_exec_exits_with_the_commands_status_and_passes_sigterm_on(tmp_path: Path) -> None:
    root = str(tmp_path / "root")
    assert (
        trainpool_exec("--root", root, "--", sys.executable, "-c", "raise SystemExit(7)").returncode
        == 7
    )
    missing = trainpool_exec("--root", root, "--", "no-such-command-here")
    assert missing.returncode == 127 and "no-such-command-here" in missing.stderr
    ready = tmp_path / "ready"
    code = f"import pathlib, time; pathlib.Path({str(ready)!r}).touch(); time.sleep(60)"
    clean = {k: v for k, v in os.environ.items() if k != EMULATOR_ENV}

    def sleeping() -> subprocess.Popen[bytes]:
        """``trainpool exec`` of a command that sleeps, once the command runs."""
        ready.unlink(missing_ok=True)
        proc = subprocess.Popen(
            [*CLI, "exec", "--root", root, "--", sys.executable, "-c", code], env=clean
        )
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        return proc

    proc = sleeping()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    # the kernel may give the signal to any of exec's threads (the emulator's, gRPC's): it
    # still reaches the command, not only when it lands on the main thread
    proc = sleeping()
    signal_other_thread(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM


def test_an_emulator_named_elsewhere_is_used_with_its_own_store(tmp_path: Path) -> None:
    with emulator.start(tmp_path / "served", storage=True) as emu:
        env = dict(
            os.environ, **{EMULATOR_ENV: emu.address, "TRAINPOOL_HOME": str(tmp_path / "elsewhere")}
        )
        done = trainpool_exec(
            "--", sys.executable, str(USER_CODE / "sdk_flows.py"), "storage", env=env
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert (emu.root / "gcs" / "demo-staging" / "notes" / "hello.txt").is_file()
        assert not (tmp_path / "elsewhere").exists()
        wrong = trainpool_exec("--root", str(tmp_path / "other"), "--", "true", env=env)
        assert wrong.returncode == 2 and "is not the store of the emulator" in wrong.stderr


def test_trainpool_submit_finds_the_bucket_in_the_named_emulators_store(tmp_path: Path) -> None:
    pipeline = compile_fixture("tiny", tmp_path)
    with emulator.start(tmp_path / "served") as emu:
        (emu.root / "gcs" / "bkt").mkdir(parents=True)
        env = dict(
            os.environ, **{EMULATOR_ENV: emu.address, "TRAINPOOL_HOME": str(tmp_path / "elsewhere")}
        )
        env.pop("STORAGE_EMULATOR_HOST", None)
        done = subprocess.run(
            [
                *CLI,
                "submit",
                str(pipeline),
                "--project",
                "demo-project",
                "--location",
                "us-central1",
                "--pipeline-root",
                "gs://bkt/root",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "submitted projects/demo-project/locations/us-central1/pipelineJobs/" in done.stdout


@pytest.mark.skipif(shutil.which("gcloud") is None, reason="gcloud is not installed")
def test_gcloud_storage_reads_the_store(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "gcs" / "bkt" / "data").mkdir(parents=True)
    (root / "gcs" / "bkt" / "data" / "rows.csv").write_text("a,b\n1,2\n")
    env = dict(os.environ, CLOUDSDK_CONFIG=str(tmp_path / "gcloud"))
    listed = trainpool_exec(
        "--root", str(root), "--", "gcloud", "storage", "ls", "gs://bkt/data/", env=env
    )
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["gs://bkt/data/rows.csv"]
    shown = trainpool_exec(
        "--root", str(root), "--", "gcloud", "storage", "cat", "gs://bkt/data/rows.csv", env=env
    )
    assert shown.stdout == "a,b\n1,2\n"


def test_pipeline_job_submit_is_quick_quiet_and_fills_task_details(tmp_path: Path) -> None:
    """``PipelineJob.submit()`` asks Cloud Resource Manager for the project number on the way
    (google-cloud-aiplatform ``gcs_utils._verify_bucket_ownership``); served locally, it
    returns at once with no "bucket squatting" traceback. ``task_details`` hold the root
    task, named after the job's id, and each task with its inputs and outputs."""
    pipeline = compile_fixture("gcpc_custom_job", tmp_path)
    done = trainpool_exec(
        "--root",
        str(tmp_path / "root"),
        "--",
        sys.executable,
        str(USER_CODE / "submit_pipeline.py"),
        str(pipeline),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "squatting" not in done.stderr
    result = lines(done.stdout)["result"]
    assert result["state"] == "PIPELINE_STATE_SUCCEEDED"
    root, task = result["tasks"]  # type: ignore[misc]
    assert root["name"] == str(result["job"]).rsplit("/", 1)[1] and root["id"] == 1
    assert task["name"] == "custom-training-job" and task["parent"] == 1
    assert task["state"] == "SUCCEEDED" and task["started"] and task["ended"]
    assert task["metadata"]["input:display_name"] == "gcpc-train"
    created = json.loads(task["metadata"]["output:gcp_resources"])["resources"][0]
    assert created["resourceType"] == "CustomJob" and "/customJobs/" in created["resourceUri"]
