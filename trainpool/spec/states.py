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

FINAL_PIPELINE_STATES = frozenset(
    {"PIPELINE_STATE_SUCCEEDED", "PIPELINE_STATE_FAILED", "PIPELINE_STATE_CANCELLED"}
)
"""States a PipelineJob never leaves."""


def job_is_final(state_name: str) -> bool:
    """Whether a job in ``state_name`` (e.g. ``"JOB_STATE_PAUSED"``) has ended for good."""
    return state_name in FINAL_JOB_STATES


def pipeline_is_final(state_name: str) -> bool:
    """Whether a pipeline job in ``state_name`` has ended for good."""
    return state_name in FINAL_PIPELINE_STATES
