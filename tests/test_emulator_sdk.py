"""The high-level google-cloud-aiplatform SDK, unchanged, against the emulator over real gRPC."""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from fixtures.host_image import HOST_IMAGE
from google.cloud import aiplatform
from google.cloud.aiplatform import hyperparameter_tuning as hpt
from google.cloud.aiplatform import jobs

import trainpool.emulator as emulator

pytestmark = pytest.mark.timeout(90)

TRAINER = """
import argparse, hypertune
parser = argparse.ArgumentParser()
parser.add_argument("--x", type=float, default=1.0)
parser.add_argument("--opt", default="sgd")
args = parser.parse_args()
hypertune.HyperTune().report_hyperparameter_tuning_metric("loss", (args.x - 2) ** 2)
"""


@pytest.fixture
def sdk(tmp_path: Path, sdk_emulator: emulator.Emulator, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The SDK as a notebook calls it, against a fresh emulator (``sdk_emulator``)."""
    monkeypatch.setattr(jobs, "_JOB_WAIT_TIME", 0.2)
    (tmp_path / "trainer.py").write_text(TRAINER)
    return tmp_path


def pools(tmp_path: Path, workers: int) -> list[dict[str, object]]:
    spec = {
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {
            "image_uri": HOST_IMAGE,
            "command": [sys.executable, str(tmp_path / "trainer.py")],
        },
    }
    return [{**spec, "replica_count": 1}, {**spec, "replica_count": workers}]


def test_custom_job_run(sdk: Path) -> None:
    job = aiplatform.CustomJob(
        display_name="sdk-job",
        worker_pool_specs=pools(sdk, 2),
        staging_bucket="gs://bucket/staging",
        project="demo",
        location="us-central1",
    )
    job.run(sync=True)
    assert job.state.name == "JOB_STATE_SUCCEEDED"
    assert job.resource_name.startswith("projects/demo/locations/us-central1/customJobs/")
    logs = sorted(p.name for p in (sdk / "root/jobs" / job.name).glob("workerpool*.log"))
    assert logs == ["workerpool0-0.log", "workerpool1-0.log", "workerpool1-1.log"]
    listed = aiplatform.CustomJob.list(project="demo", location="us-central1")
    assert [j.resource_name for j in listed] == [job.resource_name]


def test_hyperparameter_tuning_job_run(sdk: Path) -> None:
    trial_job = aiplatform.CustomJob(
        display_name="trial",
        worker_pool_specs=pools(sdk, 0)[:1],
        staging_bucket="gs://bucket/staging",
        project="demo",
        location="us-central1",
    )
    tuning = aiplatform.HyperparameterTuningJob(
        display_name="sdk-sweep",
        custom_job=trial_job,
        metric_spec={"loss": "minimize"},
        parameter_spec={
            "x": hpt.DiscreteParameterSpec(values=[1, 2, 4], scale="linear"),
            "opt": hpt.CategoricalParameterSpec(values=["sgd", "adam"]),
        },
        max_trial_count=6,
        parallel_trial_count=3,
        search_algorithm="grid",
        project="demo",
        location="us-central1",
    )
    tuning.run(sync=True)
    assert tuning.state.name == "JOB_STATE_SUCCEEDED"
    trials = tuning.trials
    assert [t.id for t in trials] == ["1", "2", "3", "4", "5", "6"]
    losses = {
        (t.parameters[0].value, t.parameters[1].value): t.final_measurement.metrics[0].value
        for t in trials
    }
    assert losses == {
        (1.0, "sgd"): 1.0,
        (1.0, "adam"): 1.0,
        (2.0, "sgd"): 0.0,
        (2.0, "adam"): 0.0,
        (4.0, "sgd"): 4.0,
        (4.0, "adam"): 4.0,
    }


def test_pipeline_job_schedule_create_pause_update_resume_wait_list_jobs(sdk: Path) -> None:
    """The SDK system test's flow (python-aiplatform tests/system/aiplatform/
    test_pipeline_job_schedule.py): create(cron, max_run_count=2, max_concurrent_run_count=2),
    pause, update(cron), resume(catch_up=True), wait(), then list_jobs() has max_run_count
    runs. The emulator's clock is moved instead of waiting minutes; ``wait()`` returns
    because the schedule is COMPLETED once its second run starts ("The schedule will be
    completed when either started_run_count >= max_run_count ...")."""
    from fixtures.pipelines import compile_fixture

    from trainpool.config import EMULATOR_ENV
    from trainpool.emulator_client import advance_clock

    state = aiplatform.gapic.Schedule.State
    job = aiplatform.PipelineJob(
        display_name="tiny",
        template_path=str(compile_fixture("tiny", sdk)),
        pipeline_root="gs://demo-bucket/root",
        parameter_values={"a": 5},
        enable_caching=False,
        project="demo",
        location="us-central1",
    )
    schedule = aiplatform.PipelineJobSchedule(pipeline_job=job, display_name="nightly")
    schedule.create(cron="*/5 * * * *", max_run_count=2, max_concurrent_run_count=2)
    assert schedule.resource_name.startswith("projects/demo/locations/us-central1/schedules/")
    schedule.pause()
    assert schedule.state == state.PAUSED
    schedule.update(cron="* * * * *")
    assert schedule.cron == "* * * * *"
    schedule.resume(catch_up=True)  # the SDK does not send catch_up: resumed without it
    assert schedule.state == state.ACTIVE
    done = advance_clock(
        os.environ[EMULATOR_ENV], by=timedelta(minutes=3), wait_for_runs=True, wait_timeout_s=60
    )
    assert len(done.started) == 2 and done.idle
    schedule.wait()
    assert schedule.state == state.COMPLETED
    where = {"project": "demo", "location": "us-central1"}
    runs = schedule.list_jobs(**where)
    assert len(runs) == 2
    assert {run.state.name for run in runs} == {"PIPELINE_STATE_SUCCEEDED"}
    full = schedule.list_jobs(enable_simple_view=False, **where)
    assert {run.gca_resource.schedule_name for run in full} == {schedule.resource_name}
    listed = aiplatform.PipelineJobSchedule.list(**where)
    assert [s.resource_name for s in listed] == [schedule.resource_name]
