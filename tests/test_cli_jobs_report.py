"""``trainpool jobs report``: per-step data from the emulator's files, and what it refuses."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from fixtures.host_image import HOST_IMAGE, host_image
from fixtures.jobs import wait_job
from typer.testing import CliRunner

import trainpool.emulator as emulator
from trainpool.cli import app
from trainpool.cli.jobs_report import measurements_from_files
from trainpool.home import JobFiles
from trainpool.runtime.hypertune import Reporter
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(60)


def test_trials_without_measurements_get_those_of_their_metric_file(tmp_path: Path) -> None:
    metric_file = tmp_path / "trial-2" / "hypertune" / "workerpool0-0.metrics"
    reporter = Reporter({"CLOUD_ML_HP_METRIC_FILE": str(metric_file), "CLOUD_ML_TRIAL_ID": "2"})
    reporter.report("loss", 0.5, global_step=1)
    reporter.report("loss", 0.25, global_step=2)
    kept = [{"stepCount": "7", "metrics": [{"metricId": "loss", "value": 1.0}]}]
    job = {"trials": [{"id": "1", "measurements": kept}, {"id": "2"}, {"id": "3"}]}
    measurements_from_files(job, JobFiles(tmp_path))
    assert job["trials"][0]["measurements"] == kept
    assert job["trials"][1]["measurements"] == [
        {"stepCount": "1", "metrics": [{"metricId": "loss", "value": 0.5}]},
        {"stepCount": "2", "metrics": [{"metricId": "loss", "value": 0.25}]},
    ]
    assert job["trials"][2]["measurements"] == []  # a trial that wrote no metric file


def test_a_custom_job_is_refused_with_what_is_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with emulator.start(tmp_path) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        pool = {
            "replica_count": 1,
            "machine_spec": {"machine_type": "n1-standard-4"},
            "container_spec": {"image_uri": "local/none", "command": [sys.executable, "-V"]},
        }
        job = job_client("us-central1").create_custom_job(
            parent="projects/demo/locations/us-central1",
            custom_job={"display_name": "one", "job_spec": {"worker_pool_specs": [pool]}},
        )
        result = CliRunner().invoke(app, ["jobs", "report", job.name, "--out", "x.html"])
    assert result.exit_code == 2
    assert f"JOB: {job.name} is a CustomJob; accepted: a HyperparameterTuningJob" in result.output
    assert not Path("x.html").exists()


TRAINER = """
import sys, time
import hypertune
lr = float(sys.argv[-1].split("=")[1])
tuner = hypertune.HyperTune()
for step in range(1, 13):
    time.sleep(0.05)
    value = 0.05 if lr > 0.05 and step >= 3 else step / 12
    tuner.report_hyperparameter_tuning_metric("acc", value, global_step=step)
"""


def test_the_report_of_an_emulator_sweep_marks_the_trials_its_rule_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "trainer.py").write_text(TRAINER)
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {
            "image_uri": HOST_IMAGE,
            "command": [sys.executable, str(tmp_path / "trainer.py")],
        },
    }
    sweep = {
        "display_name": "stops",
        "max_trial_count": 4,
        "parallel_trial_count": 3,
        "study_spec": {
            "metrics": [{"metric_id": "acc", "goal": "MAXIMIZE"}],
            "parameters": [
                {"parameter_id": "lr", "discrete_value_spec": {"values": [0.01, 0.02, 0.03, 0.1]}}
            ],
            "algorithm": "GRID_SEARCH",
            "median_automated_stopping_spec": {},
        },
        "trial_job_spec": {"worker_pool_specs": [pool]},
    }
    with emulator.start(tmp_path / "root") as emu:
        host_image(emu.root)
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        created = client.create_hyperparameter_tuning_job(
            parent="projects/demo/locations/us-central1", hyperparameter_tuning_job=sweep
        )
        wait_job(client.get_hyperparameter_tuning_job, created.name, 40)
        out = tmp_path / "report.html"
        result = CliRunner().invoke(
            app, ["jobs", "report", created.name, "--out", str(out), "--root", str(emu.root)]
        )
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert "4 trials (4 succeeded; 1 stopped early)" in html
    assert "<td>SUCCEEDED, stopped early</td>" in html
    assert re.search(r"trial 4 \(stopped at step \d+\)", html)
    assert "Stopped early by the study&#x27;s medianAutomatedStoppingSpec at step" in html
