"""A sweep's rules for its trials, written once: which measurement counts, when failed
trials fail the sweep.

Applied by :mod:`trainpool.emulator.sweeps.sweep`; a job's own failure rules (restarts,
retries) are :mod:`trainpool.emulator.jobs.failure_rules`.

Which measurement is a trial's final one: ``StudySpec.measurementSelectionType``
("LAST_MEASUREMENT: Use the last measured objective value"; "BEST_MEASUREMENT: Use the best
measured objective value", aiplatform v1 ``study.proto``), LAST by default.
"""

from __future__ import annotations

from trainpool.runtime.hypertune import MetricRecord

TRIALS_DECIDE_LIMIT = 3
"""``maxFailedTrialCount: 0`` means "Vertex AI decides how many Trials must fail before the
whole job fails" (HyperparameterTuningJob reference,
https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.hyperparameterTuningJobs).
Vertex does not document its choice. The emulator's: while no trial has succeeded,
``min(maxTrialCount, 3)`` failed trials fail the job (a broken trainer stops early instead
of spending the whole budget); once any trial has succeeded, failures never fail it (the
sweep has a result to report; Determined's rule, "an experiment can complete successfully
as long as at least one of the trials within it completes successfully",
https://docs.determined.ai/latest/training/hyperparameter/handle-trial-errors.html)."""


def trials_fail_job(failed: int, succeeded: int, max_failed: int, max_trials: int) -> bool:
    """Whether ``failed`` failed trials (``succeeded`` so far) fail a sweep."""
    if max_failed > 0:
        return failed >= max_failed
    return succeeded == 0 and failed >= min(max_trials, TRIALS_DECIDE_LIMIT)


def trials_rule(max_failed: int, max_trials: int) -> str:
    """The rule in words, for the job's error message and log."""
    if max_failed > 0:
        return f"max_failed_trial_count is {max_failed}"
    limit = min(max_trials, TRIALS_DECIDE_LIMIT)
    return (
        f"max_failed_trial_count is 0 (the service decides): {limit} failed trial(s) with "
        "none succeeded fail the job"
    )


def measurement(
    records: list[MetricRecord], metric_id: str, goal: str, selection: str
) -> tuple[float, int] | None:
    """``(value, global_step)`` as the study says: the LAST report (the default), or the BEST."""
    reports = [(r.values[metric_id], r.global_step) for r in records if metric_id in r.values]
    if not reports:
        return None
    if selection == "BEST_MEASUREMENT":
        pick = max if goal == "MAXIMIZE" else min
        return pick(reports, key=lambda report: report[0])
    return reports[-1]
