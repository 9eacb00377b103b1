"""A sweep stops hopeless trials early, as its study's ``automated_stopping_spec`` asks.

Over gRPC with the official client. The median rule: "stops a pending Trial if the Trial's
best objective_value is strictly below the median 'performance' of all completed Trials
reported up to the Trial's last measurement" (``MedianAutomatedStoppingSpec``, aiplatform v1
study.proto). ``Trial.State.STOPPING``: "Indicates that the Trial should stop according to
the service" (same proto). The emulator's choices where Vertex publishes nothing (a stopped
trial ends SUCCEEDED with its selected measurement, its CustomJob CANCELLED with the rule
and step as its message) are in ``trainpool.emulator.sweeps.early_stopping``.
"""

from __future__ import annotations

import re
import sys
import threading
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

import trainpool.emulator as emulator
from trainpool.emulator.jobs.failure_rules import CODE_CANCELLED
from trainpool.emulator.sweeps.early_stopping import TrialWatch
from trainpool.emulator.sweeps.trial_rules import StoppingRule
from trainpool.home import Home
from trainpool.runtime.hypertune import MetricRecord, Reporter
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(90)

Trial = study_types.Trial
LRS = [round(0.001 * n, 3) for n in range(1, 13)]
"""The grid, in the order it runs: 0.001 to 0.006 learn; 0.007 to 0.012 diverge at step 3."""
STEPS = 20

# accuracy = q * step / 20 with q = 0.9 + 10 lr; a learning rate above 0.0065 looks best for
# two steps, then diverges to 0.05 from step 3. The best trial is lr 0.006 (trial 6).
# On SIGTERM the trainer takes 0.4 s to "save a checkpoint", so STOPPING can be seen.
TRAINER = """
import argparse, signal, sys, time
import hypertune
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float)
parser.add_argument("--step_s", type=float, default=0.2)
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--diverged_step_s", type=float)  # a diverged trial's steps, if slower
args = parser.parse_args()
def stop(signum, frame):
    print("SIGTERM: saving a checkpoint", flush=True)
    time.sleep(0.4)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
tuner = hypertune.HyperTune()
quality = 0.9 + 10 * args.lr
for step in range(1, args.steps + 1):
    diverged = args.lr > 0.0065 and step >= 3
    time.sleep((args.diverged_step_s or args.step_s) if diverged else args.step_s)
    accuracy = 0.05 if diverged else quality * step / 20
    tuner.report_hyperparameter_tuning_metric("accuracy", accuracy, global_step=step)
"""


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[emulator.Emulator]:
    (tmp_path / "trainer.py").write_text(TRAINER)
    with emulator.start(tmp_path / "root") as running:
        host_image(running.root)
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", running.address)
        yield running


def tuning_job(tmp_path: Path, stopping: dict[str, Any] | None) -> dict[str, Any]:
    command = [sys.executable, str(tmp_path / "trainer.py")]
    study: dict[str, Any] = {
        "metrics": [{"metric_id": "accuracy", "goal": "MAXIMIZE"}],
        "parameters": [{"parameter_id": "lr", "discrete_value_spec": {"values": LRS}}],
        "algorithm": "GRID_SEARCH",
        "measurement_selection_type": "BEST_MEASUREMENT",
        **(stopping or {}),
    }
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": HOST_IMAGE, "command": command},
    }
    return {
        "display_name": "stopping" if stopping else "no-stopping",
        "max_trial_count": len(LRS),
        "parallel_trial_count": 3,
        "study_spec": study,
        "trial_job_spec": {"worker_pool_specs": [pool]},
    }


def best(job: Any) -> tuple[str, float]:
    measured = [(t.final_measurement.metrics[0].value, t.id) for t in job.trials]
    value, trial_id = max(measured)
    return trial_id, value


def watch_states(client: Any, name: str, seen: dict[str, set[str]], done: threading.Event) -> None:
    while not done.is_set():
        for trial in client.get_hyperparameter_tuning_job(name=name).trials:
            seen.setdefault(trial.id, set()).add(trial.state.name)
        time.sleep(0.05)


def test_median_stopping_stops_the_diverging_trials_and_keeps_the_best(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    client = job_client("us-central1")
    plain = client.create_hyperparameter_tuning_job(
        parent=PARENT, hyperparameter_tuning_job=tuning_job(tmp_path, None)
    )
    stopping = client.create_hyperparameter_tuning_job(
        parent=PARENT,
        hyperparameter_tuning_job=tuning_job(
            tmp_path, {"median_automated_stopping_spec": {"use_elapsed_duration": False}}
        ),
    )
    seen: dict[str, set[str]] = {}
    done = threading.Event()
    watcher = threading.Thread(target=watch_states, args=(client, stopping.name, seen, done))
    watcher.start()
    try:
        stopped = wait_job(client.get_hyperparameter_tuning_job, stopping.name, 75)
    finally:
        done.set()
        watcher.join()
    full = wait_job(client.get_hyperparameter_tuning_job, plain.name, 30)

    assert stopped.state == JobState.JOB_STATE_SUCCEEDED, stopped.error
    assert full.state == JobState.JOB_STATE_SUCCEEDED, full.error
    assert best(stopped) == best(full) == ("6", pytest.approx(0.96))
    assert [len(t.measurements) for t in full.trials] == [STEPS] * 12

    log = Home(emu.root).job(stopping.name.rsplit("/", 1)[1]).log.read_text()
    assert "automated stopping: medianAutomatedStoppingSpec: the median rule" in log
    for trial in stopped.trials:
        job = client.get_custom_job(name=trial.custom_job)
        steps = [m.step_count for m in trial.measurements]
        assert trial.state == Trial.State.SUCCEEDED
        if float(trial.parameters[0].value) < 0.0065:  # learns: runs to its end
            assert steps == list(range(1, STEPS + 1)), trial.id
            assert job.state == JobState.JOB_STATE_SUCCEEDED
            assert f"trial {trial.id} STOPPING" not in log
            continue
        # diverges from step 3: from step 4 the median of 6 completed trials' running averages
        # (q * 5 / 40 >= 0.113 at step 4) is above its best (q * 2 / 20 <= 0.102): stopped at
        # the first look at step 4 or later
        assert 4 <= steps[-1] < 12, (trial.id, steps)
        assert "STOPPING" in seen[trial.id], (trial.id, seen[trial.id])
        stop_step = int(
            re.findall(rf"trial {trial.id} STOPPING at step (\d+) by the median ", log)[0]
        )
        assert 4 <= stop_step <= steps[-1], (stop_step, steps)
        assert f"trial {trial.id} SUCCEEDED, stopped early after step {steps[-1]}" in log
        assert job.state == JobState.JOB_STATE_CANCELLED
        assert job.error.code == CODE_CANCELLED
        assert job.error.message.startswith(
            f"Stopped early by the study's medianAutomatedStoppingSpec at step {stop_step}: "
        ), job.error.message
        # BEST_MEASUREMENT: its best report, at step 2, before it diverged
        assert trial.final_measurement.step_count == 2
    spent = sum(len(t.measurements) for t in stopped.trials)
    assert spent < 0.75 * STEPS * 12


def test_the_watch_reads_a_metric_file_only_when_it_changed_and_keeps_every_report(
    tmp_path: Path,
) -> None:
    path = tmp_path / "workerpool0-0.metrics"
    reporter = Reporter({"CLOUD_ML_HP_METRIC_FILE": str(path)})
    watch = TrialWatch(StoppingRule("median", "medianAutomatedStoppingSpec"), "loss", "MINIMIZE")
    watch.interval_s = 0.0
    watch.start("1", path, started=time.time())
    assert watch.check(set()) == []  # no file yet
    for step in range(1, 151):  # cloudml-hypertune keeps the last 100 in the file
        reporter.report("loss", 1.0 / step, global_step=step)
        if step % 10 == 0:
            watch.check(set())
    records = watch.end("1", [])
    assert [r.global_step for r in records] == list(range(1, 151))


def test_with_use_elapsed_duration_the_x_is_seconds_since_the_trial_started() -> None:
    records = [
        MetricRecord(1000.0 + dt, "1", step, "", {"loss": v})
        for dt, step, v in [(1.5, 10, 0.9), (4.0, 20, 0.5), (6.0, 30, 0.4)]
    ]
    records.append(MetricRecord(1007.0, "1", 40, "", {"other": 1.0}))  # not the objective
    by_time = TrialWatch(StoppingRule("median", "m", use_elapsed_duration=True), "loss", "MINIMIZE")
    by_step = TrialWatch(StoppingRule("median", "m"), "loss", "MINIMIZE")
    assert by_time.curve(records, started=1000.0) == [(1.5, 0.9), (4.0, 0.5), (6.0, 0.4)]
    assert by_step.curve(records, started=1000.0) == [(10.0, 0.9), (20.0, 0.5), (30.0, 0.4)]


def test_a_convex_stop_adds_its_predicted_measurement_at_max_step_count(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    # ConvexAutomatedStoppingSpec: "a last measurement will be added to the pending trial
    # with max_num_steps and predicted objective value" (study.proto)
    client = job_client("us-central1")
    job = tuning_job(
        tmp_path,
        {"convex_automated_stopping_spec": {"max_step_count": 12, "min_measurement_count": 2}},
    )
    job["max_trial_count"], job["parallel_trial_count"] = 4, 1
    job["study_spec"]["parameters"][0]["discrete_value_spec"]["values"] = [
        0.001,
        0.002,
        0.003,
        0.012,
    ]
    # the diverged steps are slow, so the stop lands before the trial could end by itself
    # (the fresh-clone CI once saw all 12 steps of 0.05 s reported before the stop came)
    args = ["--steps=12", "--step_s=0.05", "--diverged_step_s=0.5"]
    job["trial_job_spec"]["worker_pool_specs"][0]["container_spec"]["args"] = args
    created = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=job)
    done = wait_job(client.get_hyperparameter_tuning_job, created.name, 45)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    *learning, diverging = done.trials
    assert [len(t.measurements) for t in learning] == [12, 12, 12]
    assert diverging.state == Trial.State.SUCCEEDED
    reported, added = diverging.measurements[:-1], diverging.measurements[-1]
    assert 3 <= len(reported) < 12
    # its curve is falling (0.102 at step 2, then 0.05): the overestimate is its best so far
    assert (added.step_count, added.metrics[0].value) == (12, pytest.approx(0.102))
    stopped_job = client.get_custom_job(name=diverging.custom_job)
    assert stopped_job.error.message.startswith(
        "Stopped early by the study's convexAutomatedStoppingSpec at step "
    )
