"""The CustomJob a launch creates from a plan: job-level fields, images, options."""

from __future__ import annotations

import copy

import pytest

from trainpool.vertex.launch import Options, custom_job, job_level

SPEC = {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1}]}


def test_job_level_fields_come_from_the_plan_with_given_labels_winning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VERTEX_AI_PIPELINES_RUN_LABELS", raising=False)
    fields = {"labels": {"team": "plan", "env": "prod"}, "encryptionSpec": {"kmsKeyName": "k"}}
    assert job_level(fields, {"team": "ml"}, "77") == {
        "labels": {"team": "ml", "env": "prod", "trainpool-task": "77"},
        "encryptionSpec": {"kmsKeyName": "k"},
    }
    assert fields["labels"] == {"team": "plan", "env": "prod"}, "the plan's output is not changed"


def test_unknown_job_fields_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"job_fields: \['serviceAccount'\] not accepted"):
        job_level({"serviceAccount": "x"}, {}, "1")


def test_custom_job_fills_the_image_and_carries_the_plans_fields(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VERTEX_AI_PIPELINES_RUN_LABELS", raising=False)
    job = custom_job(
        "train",
        copy.deepcopy(SPEC),
        options=Options(image_uri="img:1"),
        user_labels={},
        task_id="5",
        job_fields={"encryptionSpec": {"kmsKeyName": "k"}},
        log=lambda _: None,
    )
    assert job == {
        "displayName": "train",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": 1,
                    "containerSpec": {"imageUri": "img:1"},
                }
            ]
        },
        "labels": {"trainpool-task": "5"},
        "encryptionSpec": {"kmsKeyName": "k"},
    }
