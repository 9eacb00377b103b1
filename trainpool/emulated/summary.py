"""The last screen of a local run: its state, the winning trial, where the model is, the jobs."""

from __future__ import annotations

from pathlib import Path

from trainpool.cluster_env.gcs import GcsUriError, to_path
from trainpool.emulated.jobwatch import JobView, TrialView
from trainpool.home import Home


def best_trial(job: JobView) -> TrialView | None:
    """The sweep's best succeeded trial by its goal (MINIMIZE or MAXIMIZE); None if none."""
    done = [t for t in job.trials if t.state == "SUCCEEDED" and t.metric is not None]
    if not done:
        return None
    pick = min if job.goal == "MINIMIZE" else max
    return pick(done, key=lambda t: t.metric if t.metric is not None else 0.0)


def model_uri(job: JobView, trial: TrialView | None) -> str:
    """``<base>/model/`` (``<base>/<trial>/model/`` in a sweep), as Vertex sets AIP_MODEL_DIR."""
    if not job.base_output:
        return ""
    base = job.base_output.rstrip("/")
    return f"{base}/{trial.trial_id}/model/" if trial else f"{base}/model/"


def _local(uri: str, home: Home) -> str:
    try:
        return to_path(uri, home.gcs, "model")
    except GcsUriError:
        return ""


def _params(trial: TrialView) -> str:
    return ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in trial.parameters.items()
    )


def job_lines(jobs: list[JobView], root: Path) -> list[str]:
    """What each job ended as, its winner and model, and where its logs are."""
    home = Home(root)
    lines = []
    for job in jobs:
        lines.append(f"{job.kind} {job.name}: {job.state} (logs: {home.job(job.job_id).dir})")
        trial = best_trial(job) if job.trials else None
        if trial is not None:
            metric = f"{trial.metric:.6g}" if trial.metric is not None else "n/a"
            lines.append(f"  best trial {trial.trial_id}: {_params(trial)} (metric {metric})")
        if job.state == "SUCCEEDED" and (not job.trials or trial is not None):
            uri = model_uri(job, trial)
            if uri:
                where = _local(uri, home)
                lines.append(f"  model: {uri}" + (f" = {where}" if where else ""))
    return lines
