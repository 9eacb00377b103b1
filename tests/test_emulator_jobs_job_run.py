"""A job's life on the engine when its disk is full, over gRPC with the official client.

Vertex's own disks do not fill up under its API, so its behaviour is not published for this;
the emulator follows the API's intent: a job never stays RUNNING when it cannot go on (it
ends FAILED with a message saying why, naming the disk), and a Create the machine cannot
hold answers RESOURCE_EXHAUSTED, as Vertex answers a request beyond its quotas (429), and
creates nothing. The store sits on a small tmpfs of its own (root only).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.disks import SPEAK, fill, tmpfs
from fixtures.host_image import HOST_IMAGE, host_image
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from google.api_core import exceptions
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted after the test."""
    yield from tmpfs(tmp_path / "disk", "4M")


@pytest.fixture
def twenty_mb(tmp_path: Path) -> Iterator[Path]:
    """A 20 MiB tmpfs (the issue's), unmounted after the test."""
    yield from tmpfs(tmp_path / "disk", "20M")


def python_pool(code: str) -> dict[str, object]:
    """One replica of ``python:3.11`` (its stand-in) running ``code``."""
    return {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": "python:3.11", "command": ["python3", "-c", code]},
    }


def job_until(go: Path, then_exit: int) -> dict[str, object]:
    wait = f'while [ ! -e "{go}" ]; do sleep 0.05; done; exit {then_exit}'
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": "local/none", "command": ["sh", "-c", wait]},
    }
    return {"display_name": "on-a-small-disk", "job_spec": {"worker_pool_specs": [pool]}}


def test_a_full_disk_fails_the_job_naming_it_and_refuses_create(
    small_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = small_disk / "root"
    go = tmp_path / "go"
    with emulator.start(root) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        job = client.create_custom_job(parent=PARENT, custom_job=job_until(go, then_exit=3))
        deadline = time.monotonic() + 30
        while client.get_custom_job(name=job.name).state != JobState.JOB_STATE_RUNNING:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        filler = fill(small_disk)
        go.touch()  # exit 3 is restarted by Vertex's rules; the restart finds no room
        done = wait_job(client.get_custom_job, job.name, 30)
        assert done.state == JobState.JOB_STATE_FAILED
        assert done.error.code == 8  # RESOURCE_EXHAUSTED
        assert "No space left on the disk of the emulator's store" in done.error.message
        assert str(root) in done.error.message
        with pytest.raises(exceptions.ResourceExhausted, match=str(root)):
            client.create_custom_job(parent=PARENT, custom_job=job_until(go, then_exit=0))
        assert [j.name for j in client.list_custom_jobs(parent=PARENT)] == [job.name]
        filler.unlink()  # room again: the API creates and runs jobs
        again = client.create_custom_job(parent=PARENT, custom_job=job_until(go, then_exit=0))
        assert wait_job(client.get_custom_job, again.name, 30).state == (
            JobState.JOB_STATE_SUCCEEDED
        )
    with emulator.start(root) as emu:  # what was kept in memory reached the disk
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        kept = job_client("us-central1").get_custom_job(name=job.name)
        assert kept.state == JobState.JOB_STATE_FAILED and kept.error.code == 8


FILL = (
    "import os; folder = os.environ['TRAINPOOL_GCS_ROOT'] + '/bkt'; "
    "os.makedirs(folder, exist_ok=True); "
    "open(folder + '/model.bin', 'wb').write(b'x' * (64 << 20))"
)


@pytest.mark.parametrize("run", range(5))
def test_a_replica_whose_own_write_fills_the_disk_fails_the_job_naming_the_disk(
    run: int, small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the replica's write fails first (exit 1, which alone would be a permanent error of
    # user code); with the store's disk full the failure is the disk's: RESOURCE_EXHAUSTED
    root = small_disk / "root"
    pool = python_pool(FILL)
    with emulator.start(root, storage=False) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        job = client.create_custom_job(
            parent=PARENT,
            custom_job={"display_name": f"fills-{run}", "job_spec": {"worker_pool_specs": [pool]}},
        )
        done = wait_job(client.get_custom_job, job.name, 60)
    assert done.state == JobState.JOB_STATE_FAILED
    assert done.error.code == 8, done.error.message  # RESOURCE_EXHAUSTED
    message = done.error.message
    assert message.startswith(f"No space left on the disk of the emulator's store {root}: ")
    assert "The replica workerpool0-0 exited with a non-zero status of 1" in message


def test_output_the_disk_cannot_hold_fails_the_job_naming_the_disk_and_what_was_kept(
    twenty_mb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the case: a 2-pool job whose replicas print 30 MB each on a 20 MB store. Their
    # logs keep what fit; the job ends FAILED RESOURCE_EXHAUSTED, naming the disk and how
    # much of each log was kept, never SUCCEEDED with output missing. Room again: a job
    # succeeds without a restart, and the failed one is still FAILED after one
    root = twenty_mb / "root"
    pool = python_pool(SPEAK)
    with emulator.start(root, storage=False) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        spec = {"worker_pool_specs": [pool, pool]}
        job = client.create_custom_job(
            parent=PARENT, custom_job={"display_name": "speaks", "job_spec": spec}
        )
        done = wait_job(client.get_custom_job, job.name, 60)
        assert done.state == JobState.JOB_STATE_FAILED, done.error.message
        assert done.error.code == 8, done.error.message  # RESOURCE_EXHAUSTED
        message = done.error.message
        assert message.startswith(f"No space left on the disk of the emulator's store {root}")
        folder = root / "jobs" / job.name.rsplit("/", 1)[1]
        found = re.search(r"its log (\S+) holds the first (\d+) bytes of its output", message)
        assert found is not None, message
        log, kept = Path(found[1]), int(found[2])
        assert log.parent == folder and kept < 30_000_000
        assert log.stat().st_size >= kept  # what it said was kept is there
        for path in folder.glob("*.log"):  # room again
            path.unlink()
        for path in (root / "logging").glob("*"):
            path.unlink()
        quiet = python_pool("print('fits')")
        again = client.create_custom_job(
            parent=PARENT,
            custom_job={"display_name": "fits", "job_spec": {"worker_pool_specs": [quiet]}},
        )
        assert wait_job(client.get_custom_job, again.name, 60).state == (
            JobState.JOB_STATE_SUCCEEDED
        )
    with emulator.start(root, storage=False) as emu:  # the records were not damaged
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        kept_job = job_client("us-central1").get_custom_job(name=job.name)
        assert kept_job.state == JobState.JOB_STATE_FAILED and kept_job.error.code == 8


def test_a_trial_whose_output_the_disk_cannot_hold_is_infeasible_and_the_sweep_fails_naming_it(
    twenty_mb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each trial's replica prints 30 MB on the 20 MB store: the first trial's job fails
    # RESOURCE_EXHAUSTED (its output not all kept), the trial INFEASIBLE (Vertex's failed
    # trial) with that reason; the sweep, which cannot record more on the full disk, fails
    # RESOURCE_EXHAUSTED naming it, rather than run on or stay RUNNING
    root = twenty_mb / "root"
    pool = python_pool(SPEAK)
    sweep = {
        "display_name": "speaking-trials",
        "max_trial_count": 2,
        "parallel_trial_count": 1,
        "max_failed_trial_count": 1,
        "study_spec": {
            "metrics": [{"metric_id": "loss", "goal": "MINIMIZE"}],
            "parameters": [{"parameter_id": "x", "discrete_value_spec": {"values": [1.0, 2.0]}}],
            "algorithm": "GRID_SEARCH",
        },
        "trial_job_spec": {"worker_pool_specs": [pool]},
    }
    with emulator.start(root, storage=False) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        made = client.create_hyperparameter_tuning_job(
            parent=PARENT, hyperparameter_tuning_job=sweep
        )
        done = wait_job(client.get_hyperparameter_tuning_job, made.name, 90)
    assert done.state == JobState.JOB_STATE_FAILED, done.error
    assert done.error.code == 8, done.error.message  # RESOURCE_EXHAUSTED
    assert f"No space left on the disk of the emulator's store {root}" in done.error.message
    # Vertex's Trial.State has no FAILED: a failed trial is INFEASIBLE, with the reason
    first = done.trials[0]
    assert first.state.name == "INFEASIBLE"
    assert first.infeasible_reason.startswith(
        f"No space left on the disk of the emulator's store {root}"
    )
    assert "workerpool0-0's output could not all be kept" in first.infeasible_reason


# A trial's trainer reports, fills the store's disk, then reports each of 60 more steps with
# cloudml-hypertune, which rewrites its whole metric file at each report (``open(path, 'w')``
# of its last 100 reports, hypertune/hypertune.py, cloudml-hypertune 0.1.0.dev6). The
# rewrite's truncation frees the file's own blocks, so a report fits again until the file
# must grow past them: that write is refused and leaves the file cut short or empty, the
# reports it held lost with it. ``{caught}``: the trainer catches the error and goes on to
# exit 0, else the error ends it (exit 1).
REPORTS_LOST = """
import os, hypertune
tuner = hypertune.HyperTune()
tuner.report_hyperparameter_tuning_metric("loss", 1.0, global_step=1)
folder = os.environ["TRAINPOOL_GCS_ROOT"] + "/bkt"
os.makedirs(folder, exist_ok=True)
with open(folder + "/filler", "wb", buffering=0) as filler:
    try:
        while True:
            filler.write(b"x" * 65536)
    except OSError:
        pass
for step in range(2, 62):
    try:
        tuner.report_hyperparameter_tuning_metric("loss", 1.0 / step, global_step=step)
    except OSError:
        if not {caught}:
            raise
"""
REPORTS = (
    "import hypertune\n"
    "hypertune.HyperTune().report_hyperparameter_tuning_metric('loss', 0.25, global_step=1)\n"
)


def one_trial_sweep(name: str, code: str) -> dict[str, object]:
    """A sweep of one trial of the host image (cloudml-hypertune installed) running ``code``."""
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": HOST_IMAGE, "command": ["python3", "-c", code]},
    }
    return {
        "display_name": name,
        "max_trial_count": 1,
        "parallel_trial_count": 1,
        "max_failed_trial_count": 1,
        "study_spec": {
            "metrics": [{"metric_id": "loss", "goal": "MINIMIZE"}],
            "parameters": [{"parameter_id": "x", "discrete_value_spec": {"values": [1.0]}}],
            "algorithm": "GRID_SEARCH",
        },
        "trial_job_spec": {"worker_pool_specs": [pool]},
    }


@pytest.mark.parametrize("caught", [True, False], ids=["trainer-exits-0", "trainer-fails"])
def test_a_metric_report_the_disk_refused_fails_the_trial_naming_the_disk(
    caught: bool, twenty_mb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the trial's CustomJob fails RESOURCE_EXHAUSTED naming the disk and the metric file
    # (never SUCCEEDED with its reports gone), the trial is INFEASIBLE with that reason (a
    # failed trial, as Vertex marks one) and the sweep fails by its max_failed_trial_count;
    # with room again a sweep succeeds without a restart, and the records hold both after one
    root = twenty_mb / "root"
    with emulator.start(root, storage=False) as emu:
        host_image(root)
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        code = REPORTS_LOST.format(caught=caught)
        made = client.create_hyperparameter_tuning_job(
            parent=PARENT, hyperparameter_tuning_job=one_trial_sweep("loses-reports", code)
        )
        done = wait_job(client.get_hyperparameter_tuning_job, made.name, 60)
        assert done.state == JobState.JOB_STATE_FAILED, done.error
        trial = done.trials[0]
        assert trial.state.name == "INFEASIBLE", (trial, done.error)
        reason = trial.infeasible_reason
        assert reason.startswith(f"No space left on the disk of the emulator's store {root}")
        folder = (root / "jobs" / trial.custom_job.rsplit("/", 1)[1]).resolve()  # the trial's
        metric_file = folder / "hypertune" / "workerpool0-0.metrics"
        size = metric_file.stat().st_size
        held = (
            re.escape(
                f"workerpool0-0's hyperparameter tuning metric reports could not be kept: its "
                f"metric file {metric_file} "
            )
            + rf"(is empty|holds (\d+) whole report\(s\) and a cut-short line) \({size} bytes\)"
        )
        found = re.search(held, reason)
        assert found is not None, reason
        text = metric_file.read_bytes()
        assert not text.endswith(b"\n") and text.count(b"\n") == int(found[2] or 0)
        assert ("with status 0" in reason) is caught
        job = client.get_custom_job(name=trial.custom_job)
        assert job.state == JobState.JOB_STATE_FAILED and job.error.code == 8, job.error
        (root / "gcs" / "bkt" / "filler").unlink()  # room again
        again = client.create_hyperparameter_tuning_job(
            parent=PARENT, hyperparameter_tuning_job=one_trial_sweep("reports", REPORTS)
        )
        ok = wait_job(client.get_hyperparameter_tuning_job, again.name, 60)
        assert ok.state == JobState.JOB_STATE_SUCCEEDED, ok.error
        assert ok.trials[0].final_measurement.metrics[0].value == 0.25
    with emulator.start(root, storage=False) as emu:  # the records were not damaged
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        kept = client.get_hyperparameter_tuning_job(name=made.name)
        assert kept.state == JobState.JOB_STATE_FAILED
        assert kept.trials[0].infeasible_reason == reason
        assert client.get_hyperparameter_tuning_job(name=again.name).state == (
            JobState.JOB_STATE_SUCCEEDED
        )
