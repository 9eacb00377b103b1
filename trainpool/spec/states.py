"""Which job and pipeline states are final: the one statement of it, by name.

From the API's own enum comments (``google/cloud/aiplatform/v1/job_state.proto`` and
``pipeline_state.proto``, as shipped in ``google.cloud.aiplatform_v1.types``): a job
that is PAUSED "has been stopped, and can be resumed", UPDATING "goes back to the
RUNNING state", CANCELLING "may only go to" SUCCEEDED, FAILED or CANCELLED. None of
those is final; a job in them still holds (or may again hold) resources.
"""

from __future__ import annotations

FINAL_JOB_STATES = frozenset(
    {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
    }
)
"""States a CustomJob or HyperparameterTuningJob never leaves."""

ADOPTABLE_JOB_STATES = frozenset(
    {
        "JOB_STATE_QUEUED",
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_PAUSED",
        "JOB_STATE_UPDATING",
    }
)
"""States in which a retried or re-run launcher takes over a job instead of making another:
it is on its way (or already succeeded). A job FAILED, CANCELLED, EXPIRED, CANCELLING or
PARTIALLY_SUCCEEDED is not adopted: the task's retry must train again."""

FINAL_PIPELINE_STATES = frozenset(
    {"PIPELINE_STATE_SUCCEEDED", "PIPELINE_STATE_FAILED", "PIPELINE_STATE_CANCELLED"}
)
"""States a PipelineJob never leaves."""


def job_is_final(state_name: str) -> bool:
    """Whether a job in ``state_name`` (e.g. ``"JOB_STATE_PAUSED"``) has ended for good."""
    return state_name in FINAL_JOB_STATES
