"""A scheduled run's PipelineJob id (``schedules/rules.py`` ``job_id_for``) is one that
CreatePipelineJob accepts (``[a-z][-a-z0-9]{0,127}``, ``pipeline_jobs/jobs.py``), whatever
the pipeline's name."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from google.cloud.aiplatform_v1.types import schedule as sc
from hypothesis import given
from hypothesis import strategies as st

from trainpool.emulator.pipeline_jobs.jobs import JOB_ID
from trainpool.emulator.schedules.rules import job_id_for

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def schedule(pipeline_name: str) -> sc.Schedule:
    made = sc.Schedule(name="projects/p/locations/us-central1/schedules/1000")
    made.create_pipeline_job_request.pipeline_job.pipeline_spec = {
        "pipelineInfo": {"name": pipeline_name}
    }
    return made


@pytest.mark.parametrize(
    ("pipeline_name", "job_id"),
    [
        ("train", "train-20260102030405-1000"),
        ("2-stage", "run-2-stage-20260102030405-1000"),
        ("", "run-20260102030405-1000"),
        ("My Pipeline", "my-pipeline-20260102030405-1000"),
    ],
)
def test_a_scheduled_runs_id(pipeline_name: str, job_id: str) -> None:
    assert job_id_for(schedule(pipeline_name), WHEN) == job_id
    assert JOB_ID.fullmatch(job_id)


@given(st.text(max_size=200))
def test_every_scheduled_runs_id_is_a_valid_pipeline_job_id(pipeline_name: str) -> None:
    assert JOB_ID.fullmatch(job_id_for(schedule(pipeline_name), WHEN))
