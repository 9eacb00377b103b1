"""What ``hyperparameter_sweep`` does: build the HyperparameterTuningJob, run it, pick the best.

The trial spec is built exactly like ``launch_custom_job``'s job spec (pools in
place, images filled, planner's rules), and the study is checked by
``trainpool.plan.validate_study`` (the emulator's rule too) before anything is created.
Early stopping is the study's ``early_stopping`` (readable) or its stopping spec (REST),
or the ``early_stopping`` argument, which replaces it; it reaches Vertex unchanged.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainpool.spec import coerce_ints
from trainpool.spec.study import STOPPING, enum_name, to_study_spec, with_early_stopping
from trainpool.spec.trials import best_trial, trial_rows
from trainpool.vertex import clients, jobs
from trainpool.vertex.launch import (
    JobFailed,
    Options,
    follow,
    job_level,
    job_spec,
    model_uri,
    require,
)


def study_spec(study: dict[str, Any]) -> dict[str, Any]:
    """The StudySpec REST JSON of a readable study, or of one already in REST form."""
    study = coerce_ints(copy.deepcopy(study))
    if isinstance(study, dict) and isinstance(study.get("metrics"), list):
        return study
    return to_study_spec(study)


def tuning_job(
    display_name: str,
    custom_job_spec: dict[str, Any],
    study: dict[str, Any],
    *,
    max_trial_count: int,
    parallel_trial_count: int,
    max_failed_trial_count: int,
    options: Options,
    user_labels: dict[str, str],
    task_id: str,
    job_fields: dict[str, Any] | None = None,
    log: Callable[[str], None] = print,
    early_stopping: Any = None,
) -> dict[str, Any]:
    """The whole HyperparameterTuningJob (REST JSON) one task creates; ``early_stopping``
    (readable, e.g. ``{"median": {}}``; empty: the study's own) replaces the study's."""
    from trainpool.plan.study_rules import validate_study

    require(display_name=display_name)
    spec = study_spec(study)
    if early_stopping:
        spec = with_early_stopping(spec, coerce_ints(copy.deepcopy(early_stopping)))
    for warning in validate_study(
        spec,
        max_trial_count=max_trial_count,
        parallel_trial_count=parallel_trial_count,
        max_failed_trial_count=max_failed_trial_count,
    ):
        log(f"warning: {warning}")
    return {
        "displayName": display_name,
        "studySpec": spec,
        "maxTrialCount": int(max_trial_count),
        "parallelTrialCount": int(parallel_trial_count),
        "maxFailedTrialCount": int(max_failed_trial_count),
        "trialJobSpec": job_spec(custom_job_spec, options, log),
        **job_level(job_fields, user_labels, task_id),
    }


@dataclass(frozen=True)
class SweepResult:
    job_name: str
    state: str
    error: str
    metric_id: str
    goal: str
    trials: list[dict[str, Any]]
    best: dict[str, Any] | None = field(default=None)
    job: dict[str, Any] = field(default_factory=dict)  # the final job as REST JSON
    stopped: dict[str, str] = field(default_factory=dict)  # stopped_trials(job)

    def raise_for_state(self) -> None:
        """Fail the task unless the job succeeded with at least one measured trial."""
        if self.state != "JOB_STATE_SUCCEEDED":
            raise JobFailed(f"{self.job_name} ended {self.state}: {self.error or 'no error given'}")
        if self.best is None:
            raise JobFailed(
                f"{self.job_name}: no trial reported metric {self.metric_id!r} "
                f"({len(self.trials)} trials); report it with cloudml-hypertune "
                "or trainpool.runtime.hypertune under that exact id"
            )

    def best_outputs(self) -> tuple[str, dict[str, Any], float]:
        """The best trial's id, parameters and metric value (after ``raise_for_state``)."""
        if self.best is None:
            raise JobFailed(f"{self.job_name}: no best trial")
        return (
            str(self.best["id"]),
            dict(self.best["parameters"]),
            float(self.best["metrics"][self.metric_id]),
        )

    @property
    def model_uri(self) -> str:
        """The best trial's model directory ("" when there is no best trial or no base)."""
        if self.best is None:
            return ""
        return model_uri(self.job.get("trialJobSpec", {}), str(self.best["id"]))

    @property
    def outcome(self) -> dict[str, Any]:
        """What the pipeline hands on from a sweep: the job, the winner, its model, the table."""
        best = self.best or {}
        return {
            "job": self.job_name,
            "state": self.state,
            "modelUri": self.model_uri,
            "metricId": self.metric_id,
            "goal": self.goal,
            "bestTrialId": str(best.get("id", "")),
            "bestParameters": dict(best.get("parameters", {})),
            "bestMetricValue": best.get("metrics", {}).get(self.metric_id),
            "trials": [
                {k: row[k] for k in ("id", "state", "parameters", "metrics")} for row in self.trials
            ],
        }


def write_reports(result: SweepResult, trials_path: str, html_path: str) -> None:
    """Every trial as JSON at ``trials_path`` and the trials report (HTML) at ``html_path``."""
    from trainpool.reports.page import trials_page  # matplotlib loads only to draw a report
    from trainpool.reports.sweep_data import from_job

    Path(trials_path).write_text(json.dumps(result.trials, indent=2, sort_keys=True))
    Path(html_path).write_text(trials_page(from_job(result.job, result.stopped)), encoding="utf-8")


def stopped_trials(client: Any, job: dict[str, Any]) -> dict[str, str]:
    """The trials of ``job`` (REST JSON) a stopping rule stopped early: id -> why.

    Asked only when the study has an ``automated_stopping_spec``: a SUCCEEDED trial whose
    CustomJob ended CANCELLED, with that job's message (the emulator's contract; Vertex does
    not document how a stopped trial's job ends, and a job that cannot be read is skipped).
    """
    from google.api_core import exceptions

    if not any(key in job.get("studySpec", {}) for key in STOPPING.values()):
        return {}
    stopped = {}
    for trial in job.get("trials", []):
        if trial.get("state") not in ("SUCCEEDED", 4) or not trial.get("customJob"):
            continue
        try:
            custom = client.get_custom_job(name=trial["customJob"], timeout=jobs.CALL_TIMEOUT_S)
        except exceptions.GoogleAPICallError:
            continue
        if jobs.state_name(custom) == "JOB_STATE_CANCELLED":
            stopped[str(trial["id"])] = custom.error.message or "stopped early"
    return stopped


def run_sweep(
    project: str,
    location: str,
    job: dict[str, Any],
    gcp_resources: str,
    task_id: str,
    launcher: jobs.JobLauncher | None = None,
) -> SweepResult:
    """Create (or re-attach to) the tuning job, follow it, and pick its best trial."""
    final, rest = follow(jobs.TUNING_JOB, project, location, job, gcp_resources, task_id, launcher)
    metric = job["studySpec"]["metrics"][0]
    goal = enum_name("goal", metric["goal"])
    rows = trial_rows(rest)
    client = launcher.client if launcher else clients.job_client(location)
    return SweepResult(
        job_name=final.name,
        state=jobs.state_name(final),
        error=final.error.message,
        metric_id=metric["metricId"],
        goal=goal,
        trials=rows,
        best=best_trial(rows, metric["metricId"], goal),
        job=rest,
        stopped=stopped_trials(client, rest),
    )
