"""Study fields the emulator does not apply are refused or said in the job log, never ignored.

Over gRPC with the official client. Refused (INVALID_ARGUMENT, before anything is created):
``observationNoise`` and ``defaultValue``, "Not supported by HyperparameterTuningJob or
TrainingPipeline" (aiplatform v1 study.proto). Noted in the sweep's job log:
``studyStoppingConfig``, ``metrics[].safetyConfig``, metrics after the first, and the convex
rule's ``learningRateParameterName`` / ``updateAllStoppedTrials``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_image import HOST_IMAGE, host_image
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from google.api_core import exceptions
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.emulator.sweeps.unapplied_study_fields import notes
from trainpool.home import Home
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(60)

TRAINER = """
import hypertune
hypertune.HyperTune().report_hyperparameter_tuning_metric("score", 1.0, global_step=1)
"""


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[emulator.Emulator]:
    (tmp_path / "trainer.py").write_text(TRAINER)
    with emulator.start(tmp_path / "root") as running:
        host_image(running.root)
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", running.address)
        yield running


def job(tmp_path: Path, **study: Any) -> dict[str, Any]:
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {
            "image_uri": HOST_IMAGE,
            "command": [sys.executable, str(tmp_path / "trainer.py")],
        },
    }
    return {
        "display_name": "fields",
        "max_trial_count": 1,
        "parallel_trial_count": 1,
        "study_spec": {
            "metrics": [{"metric_id": "score", "goal": "MAXIMIZE"}],
            "parameters": [
                {"parameter_id": "lr", "double_value_spec": {"min_value": 0.1, "max_value": 1}}
            ],
            "algorithm": "RANDOM_SEARCH",
            **study,
        },
        "trial_job_spec": {"worker_pool_specs": [pool]},
    }


def test_fields_tuning_jobs_do_not_support_are_refused_naming_the_field(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    client = job_client("us-central1")
    with pytest.raises(exceptions.InvalidArgument) as err:
        client.create_hyperparameter_tuning_job(
            parent=PARENT, hyperparameter_tuning_job=job(tmp_path, observation_noise="HIGH")
        )
    assert "studySpec.observationNoise: 'HIGH'; accepted: unset" in err.value.message
    assert "Not supported by HyperparameterTuningJob" in err.value.message
    assert not list(client.list_hyperparameter_tuning_jobs(parent=PARENT))


def test_fields_the_emulator_does_not_apply_are_said_in_the_job_log(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    client = job_client("us-central1")
    spec = job(
        tmp_path,
        study_stopping_config={"max_num_trials": 5},
        convex_automated_stopping_spec={"learning_rate_parameter_name": "lr"},
    )
    spec["study_spec"]["metrics"].append(
        {"metric_id": "cost", "goal": "MINIMIZE", "safety_config": {"safety_threshold": 2.0}}
    )
    created = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=spec)
    done = wait_job(client.get_hyperparameter_tuning_job, created.name, 40)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    log = Home(emu.root).job(created.name.rsplit("/", 1)[1]).log.read_text()
    for line in (
        "studySpec.studyStoppingConfig is not applied by the emulator",
        "studySpec.metrics[1].safetyConfig (safe search) is not applied by the emulator",
        "only the first metric (score) drives the search, early stopping and the best trial",
        "studySpec.convexAutomatedStoppingSpec.learningRateParameterName is not applied",
        "automated stopping: convexAutomatedStoppingSpec: the emulator's tangent overestimate",
    ):
        assert line in log, line


def test_a_plain_study_has_nothing_to_note() -> None:
    assert notes({"metrics": [{"metricId": "a", "goal": "MAXIMIZE"}], "parameters": []}) == []
    assert notes({"metrics": [], "convexAutomatedStoppingSpec": {"updateAllStoppedTrials": True}})
