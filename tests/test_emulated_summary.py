"""The last screen of a local run: state, winning trial and parameters, the model, the jobs."""

from __future__ import annotations

from pathlib import Path

from trainpool.emulated.jobwatch import JobView, TrialView
from trainpool.emulated.summary import best_trial, job_lines

NAME = "projects/p/locations/us-central1/hyperparameterTuningJobs/1004"


def sweep(goal: str) -> JobView:
    trials = [
        TrialView("1", "SUCCEEDED", {"lr": 0.001}, 0.9),
        TrialView("2", "SUCCEEDED", {"lr": 0.1}, 0.2),
        TrialView("3", "INFEASIBLE", {"lr": 1.0}, None),
    ]
    kind = "HyperparameterTuningJob"
    return JobView(NAME, "d", kind, "SUCCEEDED", {}, trials, "gs://bkt/run", goal)


def test_the_winner_follows_the_goal() -> None:
    assert best_trial(sweep("MINIMIZE")).trial_id == "2"  # type: ignore[union-attr]
    assert best_trial(sweep("MAXIMIZE")).trial_id == "1"  # type: ignore[union-attr]


def test_the_lines_name_state_winner_model_and_logs(tmp_path: Path) -> None:
    assert job_lines([sweep("MINIMIZE")], tmp_path) == [
        f"HyperparameterTuningJob {NAME}: SUCCEEDED (logs: {tmp_path / 'jobs' / '1004'})",
        "  best trial 2: lr=0.1 (metric 0.2)",
        f"  model: gs://bkt/run/2/model/ = {tmp_path / 'gcs' / 'bkt' / 'run' / '2' / 'model'}/",
    ]
