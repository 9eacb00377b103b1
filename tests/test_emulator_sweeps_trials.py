"""A sweep's trials are CustomJobs, as on Vertex, and keep every reported step.

``Trial.custom_job``: "The CustomJob name linked to the Trial. It's set for a
HyperparameterTuningJob's Trial" (aiplatform v1 proto). ``Trial.measurements``: "A list of
measurements that are strictly lexicographically ordered by their induced tuples (steps,
elapsed_duration)" (same proto).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_image import HOST_IMAGE, host_image
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types import study as study_types
from google.cloud.aiplatform_v1.types.job_state import JobState
from typer.testing import CliRunner

import trainpool.emulator as emulator
from trainpool.cli import app
from trainpool.emulator.jobs.failure_rules import CODE_CANCELLED, CODE_RESOURCE_EXHAUSTED
from trainpool.emulator.sweeps.sweep import SWEEP_LABEL, TRIAL_LABEL
from trainpool.runtime.hypertune import read_metrics
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(60)

Trial = study_types.Trial

# Reports score = units * step for steps 1..3, then fails if --units equals --fail_units.
TRAINER = """
import argparse, time
import hypertune
parser = argparse.ArgumentParser()
parser.add_argument("--units", type=int)
parser.add_argument("--fail_units", type=int, default=-1)
parser.add_argument("--sleep", type=float, default=0.0)
args = parser.parse_args()
print(f"training with {args.units} units", flush=True)
tuner = hypertune.HyperTune()
for step in (1, 2, 3):
    tuner.report_hyperparameter_tuning_metric("score", args.units * step, global_step=step)
time.sleep(args.sleep)
if args.units == args.fail_units:
    raise SystemExit(1)
"""


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[emulator.Emulator]:
    (tmp_path / "trainer.py").write_text(TRAINER)
    with emulator.start(tmp_path / "root") as running:
        host_image(running.root)
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", running.address)
        monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "demo")
        monkeypatch.setenv("TRAINPOOL_HOME", str(tmp_path / "root"))
        yield running


def sweep(tmp_path: Path, *args: str, trials: int = 2, strategy: str = "") -> Any:
    command = [sys.executable, str(tmp_path / "trainer.py"), *args]
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": HOST_IMAGE, "command": command},
    }
    spec: dict[str, Any] = {"worker_pool_specs": [pool]}
    if strategy:
        spec["scheduling"] = {"strategy": strategy}
    job = {
        "display_name": "sweep",
        "labels": {"team": "a"},
        "max_trial_count": trials,
        "parallel_trial_count": min(trials, 2),
        "study_spec": {
            "metrics": [{"metric_id": "score", "goal": "MAXIMIZE"}],
            "parameters": [
                {"parameter_id": "units", "integer_value_spec": {"min_value": 1, "max_value": 2}}
            ],
            "algorithm": "GRID_SEARCH",
        },
        "trial_job_spec": spec,
    }
    return job_client("us-central1").create_hyperparameter_tuning_job(
        parent=PARENT, hyperparameter_tuning_job=job
    )


def wait_trials_running(client: Any, name: str, count: int) -> Any:
    deadline = time.monotonic() + 20
    while True:
        trials = client.get_hyperparameter_tuning_job(name=name).trials
        states = [client.get_custom_job(name=t.custom_job).state for t in trials]
        if states.count(JobState.JOB_STATE_RUNNING) == count:
            return trials
        assert time.monotonic() < deadline, states
        time.sleep(0.05)


def test_each_trial_is_a_listable_custom_job_with_logs_and_every_step(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    client = job_client("us-central1")
    created = sweep(tmp_path, "--fail_units=2")
    done = wait_job(client.get_hyperparameter_tuning_job, created.name, 45)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    sweep_id = created.name.rsplit("/", 1)[1]

    jobs = {t.id: client.get_custom_job(name=t.custom_job) for t in done.trials}
    assert [jobs[t].display_name for t in ("1", "2")] == ["sweep-trial-1", "sweep-trial-2"]
    assert {j.name.rsplit("/", 1)[0] for j in jobs.values()} == {f"{PARENT}/customJobs"}
    for trial_id, job in jobs.items():
        assert dict(job.labels) == {SWEEP_LABEL: sweep_id, TRIAL_LABEL: trial_id}
        assert job.start_time and job.end_time
        assert f"--units={trial_id}" in job.job_spec.worker_pool_specs[0].container_spec.args
    assert jobs["1"].state == JobState.JOB_STATE_SUCCEEDED
    assert jobs["2"].state == JobState.JOB_STATE_FAILED
    assert jobs["2"].error.message.startswith("The replica workerpool0-0 exited")

    listed = client.list_custom_jobs(
        request={"parent": PARENT, "filter": f'labels.{SWEEP_LABEL}="{sweep_id}"'}
    )
    assert sorted(j.name for j in listed) == sorted(j.name for j in jobs.values())
    assert not list(
        client.list_custom_jobs(request={"parent": PARENT, "filter": 'labels.team="a"'})
    )

    logs = CliRunner().invoke(app, ["jobs", "logs", jobs["2"].name.rsplit("/", 1)[1]])
    assert logs.exit_code == 0, logs.output
    assert "[workerpool0-0] training with 2 units" in logs.output
    assert "training with 1 units" not in logs.output

    for trial in done.trials:  # the failed trial keeps its steps too
        units = int(trial.parameters[0].value)
        assert [
            (m.step_count, [(x.metric_id, x.value) for x in m.metrics]) for m in trial.measurements
        ] == [(step, [("score", float(units * step))]) for step in (1, 2, 3)]
    assert [t.state for t in done.trials] == [Trial.State.SUCCEEDED, Trial.State.INFEASIBLE]


def test_cancelling_the_sweep_cancels_its_trial_jobs(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    client = job_client("us-central1")
    created = sweep(tmp_path, "--sleep=60")
    trials = wait_trials_running(client, created.name, 2)
    client.cancel_hyperparameter_tuning_job(name=created.name)
    done = wait_job(client.get_hyperparameter_tuning_job, created.name, 20)
    assert done.state == JobState.JOB_STATE_CANCELLED
    for trial in trials:
        job = client.get_custom_job(name=trial.custom_job)
        assert job.state == JobState.JOB_STATE_CANCELLED
        assert job.error.code == CODE_CANCELLED


def test_a_preempted_trial_job_fails_the_trial_with_stockout(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    client = job_client("us-central1")
    created = sweep(tmp_path, "--sleep=60", trials=1, strategy="SPOT")
    (trial,) = wait_trials_running(client, created.name, 1)
    metrics = emu.root / "jobs" / trial.custom_job.rsplit("/", 1)[1] / "hypertune"
    deadline = time.monotonic() + 20
    while len(read_metrics(str(metrics / "workerpool0-0.metrics"))) < 3:  # every step reported
        assert time.monotonic() < deadline
        time.sleep(0.05)
    ended = emu.preempt(trial.custom_job)
    assert ended.state == JobState.JOB_STATE_FAILED
    assert ended.error.code == CODE_RESOURCE_EXHAUSTED
    done = wait_job(client.get_hyperparameter_tuning_job, created.name, 20)
    assert done.state == JobState.JOB_STATE_FAILED  # its only trial failed
    assert done.trials[0].state == Trial.State.INFEASIBLE
    assert done.trials[0].infeasible_reason.startswith("STOCKOUT: ")
    assert len(done.trials[0].measurements) == 3
