"""HyperparameterTuningJob in the emulator: grid, parallel trials, failures, the real hypertune."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_image import HOST_IMAGE, host_image
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from google.api_core import exceptions
from google.cloud.aiplatform_v1.types import study as study_types
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.vertex.clients import job_client

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]


TRAINER = """
import argparse, json, os, time
import hypertune
from trainpool.runtime.gcs import local_path
parser = argparse.ArgumentParser()
parser.add_argument("--units", type=int)
parser.add_argument("--act")
parser.add_argument("--sleep", type=float, default=0.0)
parser.add_argument("--fail_units", type=int, default=-1)
parser.add_argument("--bad_metric_units", type=int, default=-1)
args = parser.parse_args()
began = time.time()
time.sleep(args.sleep)
if args.units <= args.fail_units:
    raise SystemExit(5 if args.act == "relu" else 1)  # 1 is permanent; 5 is restarted first
score = args.units * 10 + (1 if args.act == "relu" else 0)
tuner = hypertune.HyperTune()
tuner.report_hyperparameter_tuning_metric("score", score - 100, global_step=1)
tuner.report_hyperparameter_tuning_metric("score", score, global_step=2)
if args.units == args.bad_metric_units:
    with open(os.environ["CLOUD_ML_HP_METRIC_FILE"], "a") as metrics:
        metrics.write('{"score": "n/a"}\\n')
model_dir = local_path(os.environ["AIP_MODEL_DIR"])
os.makedirs(model_dir, exist_ok=True)
with open(os.path.join(model_dir, "trial.json"), "w") as out:
    json.dump({"trial": os.environ["CLOUD_ML_TRIAL_ID"], "units": args.units, "act": args.act,
               "began": began, "ended": time.time()}, out)
"""


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    (tmp_path / "trainer.py").write_text(TRAINER)
    with emulator.start(tmp_path / "root") as emu:
        host_image(emu.root)
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        yield job_client("us-central1")


def sweep(
    tmp_path: Path,
    *,
    algorithm: str = "GRID_SEARCH",
    max_trials: int = 6,
    parallel: int = 1,
    max_failed: int = 0,
    extra_args: tuple[str, ...] = (),
    selection: str = "LAST_MEASUREMENT",
) -> dict[str, Any]:
    command = [sys.executable, str(tmp_path / "trainer.py"), *extra_args]
    return {
        "display_name": "sweep",
        "max_trial_count": max_trials,
        "parallel_trial_count": parallel,
        "max_failed_trial_count": max_failed,
        "study_spec": {
            "metrics": [{"metric_id": "score", "goal": "MAXIMIZE"}],
            "parameters": [
                {"parameter_id": "units", "integer_value_spec": {"min_value": 1, "max_value": 3}},
                {"parameter_id": "act", "categorical_value_spec": {"values": ["tanh", "relu"]}},
            ],
            "algorithm": algorithm,
            "measurement_selection_type": selection,
        },
        "trial_job_spec": {
            "worker_pool_specs": [
                {
                    "replica_count": 1,
                    "machine_spec": {"machine_type": "n1-standard-4"},
                    "container_spec": {"image_uri": HOST_IMAGE, "command": command},
                }
            ],
            "base_output_directory": {"output_uri_prefix": "gs://bucket/sweep"},
        },
    }


def wait(client: Any, name: str, timeout: float = 90.0) -> Any:
    return wait_job(client.get_hyperparameter_tuning_job, name, timeout, poll_s=0.1)


def params(trial: Any) -> dict[str, Any]:
    return {p.parameter_id: p.value for p in trial.parameters}


def test_grid_sweep_runs_the_exact_grid_and_finds_the_known_best(
    client: Any, tmp_path: Path
) -> None:
    created = client.create_hyperparameter_tuning_job(
        parent=PARENT, hyperparameter_tuning_job=sweep(tmp_path, max_trials=10)
    )
    done = wait(client, created.name)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    assert [t.id for t in done.trials] == ["1", "2", "3", "4", "5", "6"]
    assert [params(t) for t in done.trials] == [
        {"units": 1.0, "act": "tanh"},
        {"units": 1.0, "act": "relu"},
        {"units": 2.0, "act": "tanh"},
        {"units": 2.0, "act": "relu"},
        {"units": 3.0, "act": "tanh"},
        {"units": 3.0, "act": "relu"},
    ]
    assert all(t.state == study_types.Trial.State.SUCCEEDED for t in done.trials)
    values = [t.final_measurement.metrics[0].value for t in done.trials]
    assert values == [10.0, 11.0, 20.0, 21.0, 30.0, 31.0]
    best = max(done.trials, key=lambda t: t.final_measurement.metrics[0].value)
    assert (best.id, params(best)) == ("6", {"units": 3.0, "act": "relu"})
    assert best.final_measurement.step_count == 2
    job_log = (tmp_path / "root/jobs" / created.name.rsplit("/", 1)[-1] / "job.log").read_text()
    assert "GRID_SEARCH: every point of the grid" in job_log
    assert "the grid has 6 points" in job_log


def test_parallel_trials_overlap_and_keep_outputs_apart(client: Any, tmp_path: Path) -> None:
    created = client.create_hyperparameter_tuning_job(
        parent=PARENT,
        hyperparameter_tuning_job=sweep(
            tmp_path, algorithm="RANDOM_SEARCH", max_trials=4, parallel=2, extra_args=("--sleep=1",)
        ),
    )
    done = wait(client, created.name)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    outputs = {}
    for trial in done.trials:
        path = tmp_path / f"root/gcs/bucket/sweep/{trial.id}/model/trial.json"
        outputs[trial.id] = json.loads(path.read_text())
        assert outputs[trial.id]["trial"] == trial.id
        assert {k: outputs[trial.id][k] for k in ("units", "act")} == params(trial)
    assert sorted(outputs) == ["1", "2", "3", "4"]
    first, second = outputs["1"], outputs["2"]
    assert first["began"] < second["ended"] and second["began"] < first["ended"]


def test_best_measurement_and_default_algorithm(client: Any, tmp_path: Path) -> None:
    spec = sweep(tmp_path, algorithm="ALGORITHM_UNSPECIFIED", max_trials=2, parallel=2)
    spec["study_spec"]["metrics"][0]["goal"] = "MINIMIZE"
    spec["study_spec"]["measurement_selection_type"] = "BEST_MEASUREMENT"
    created = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=spec)
    done = wait(client, created.name)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    for trial in done.trials:
        p = params(trial)
        expected = p["units"] * 10 + (p["act"] == "relu") - 100
        assert trial.final_measurement.metrics[0].value == expected
        assert trial.final_measurement.step_count == 1
    job_log = (tmp_path / "root/jobs" / created.name.rsplit("/", 1)[-1] / "job.log").read_text()
    assert "optuna's TPE sampler stands in for it" in job_log


def test_with_max_failed_0_three_failures_before_any_success_fail_the_job(
    client: Any, tmp_path: Path
) -> None:
    # maxFailedTrialCount 0: "Vertex AI decides"; the emulator's rule is failures.trials_fail_job
    created = client.create_hyperparameter_tuning_job(
        parent=PARENT,
        hyperparameter_tuning_job=sweep(tmp_path, extra_args=("--fail_units=2",)),
    )
    done = wait(client, created.name)
    assert done.state == JobState.JOB_STATE_FAILED
    assert done.error.message.startswith(
        "3 trial(s) failed and 0 succeeded; max_failed_trial_count is 0 (the service decides): "
        "3 failed trial(s) with none succeeded fail the job. Trial 3: The replica "
        "workerpool0-0 exited with a non-zero status of 1."
    )
    assert [t.state.name for t in done.trials] == ["INFEASIBLE"] * 3
    # trial 2 (relu) exited 5, which is not permanent: it was restarted, then the job retried
    assert (
        "restart 5 of 5"
        in (
            tmp_path / "root/jobs" / created.name.rsplit("/", 1)[-1] / "trial-2/job.log"
        ).read_text()
    )


def test_with_max_failed_0_failures_before_a_success_are_tolerated(
    client: Any, tmp_path: Path
) -> None:
    created = client.create_hyperparameter_tuning_job(
        parent=PARENT,
        hyperparameter_tuning_job=sweep(tmp_path, extra_args=("--fail_units=1",)),
    )
    done = wait(client, created.name)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    assert [t.state.name for t in done.trials] == ["INFEASIBLE"] * 2 + ["SUCCEEDED"] * 4


def test_failed_trials_within_the_limit_are_tolerated(client: Any, tmp_path: Path) -> None:
    created = client.create_hyperparameter_tuning_job(
        parent=PARENT,
        hyperparameter_tuning_job=sweep(tmp_path, max_failed=3, extra_args=("--fail_units=1",)),
    )
    done = wait(client, created.name)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    states = [t.state.name for t in done.trials]
    assert states == ["INFEASIBLE", "INFEASIBLE"] + ["SUCCEEDED"] * 4


def test_grid_with_a_double_parameter_is_refused(client: Any, tmp_path: Path) -> None:
    spec = sweep(tmp_path)
    spec["study_spec"]["parameters"].append(
        {"parameter_id": "lr", "double_value_spec": {"min_value": 0.1, "max_value": 1.0}}
    )
    with pytest.raises(exceptions.InvalidArgument, match="GRID_SEARCH with DOUBLE parameters"):
        client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=spec)
    assert list(client.list_hyperparameter_tuning_jobs(parent=PARENT)) == []


def test_cancel_sweep_stops_its_trials(client: Any, tmp_path: Path) -> None:
    created = client.create_hyperparameter_tuning_job(
        parent=PARENT,
        hyperparameter_tuning_job=sweep(tmp_path, parallel=2, extra_args=("--sleep=60",)),
    )
    deadline = time.monotonic() + 20
    while len(client.get_hyperparameter_tuning_job(name=created.name).trials) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    client.cancel_hyperparameter_tuning_job(name=created.name)
    done = wait(client, created.name, timeout=10)
    assert done.state == JobState.JOB_STATE_CANCELLED
    assert [t.state.name for t in done.trials] == ["INFEASIBLE", "INFEASIBLE"]


def test_an_unreadable_metric_file_fails_its_trial_not_the_emulator(
    client: Any, tmp_path: Path
) -> None:
    created = client.create_hyperparameter_tuning_job(
        parent=PARENT,
        hyperparameter_tuning_job=sweep(
            tmp_path, max_failed=1, extra_args=("--bad_metric_units=1",)
        ),
    )
    done = wait(client, created.name)
    assert done.state == JobState.JOB_STATE_FAILED
    assert "Internal emulator error" not in done.error.message
    assert "Trial 1: " in done.error.message
    assert "workerpool0-0.metrics:3: a value is not a number" in done.error.message
    assert [t.state.name for t in done.trials] == ["INFEASIBLE"]
    assert "a value is not a number" in done.trials[0].infeasible_reason
