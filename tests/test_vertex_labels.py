"""Job labels: run labels merged, user keys win, the task label added, bad labels refused."""

from __future__ import annotations

import pytest

from trainpool.plan.label_rules import KEY_RULE, VALUE_RULE
from trainpool.vertex.labels import job_labels, task_label_value


def test_run_labels_merge_with_user_labels_winning_and_the_task_label_added(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(
        "VERTEX_AI_PIPELINES_RUN_LABELS", '{"vertex-ai-pipelines-run-billing-id": "9", "team": "a"}'
    )
    assert job_labels({"team": "b"}, "8123") == {
        "vertex-ai-pipelines-run-billing-id": "9",
        "team": "b",
        "trainpool-task": "8123",
    }


def test_a_task_id_that_is_not_a_label_value_is_hashed_stably() -> None:
    value = task_label_value("Task/ID With Spaces")
    assert value == task_label_value("Task/ID With Spaces")
    assert value.startswith("h-") and len(value) == 42


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ({"Team": "a"}, f"labels: key 'Team'; accepted: {KEY_RULE}"),
        ({"team": "A B"}, f"labels.team: value 'A B'; accepted: {VALUE_RULE}"),
    ],
)
def test_bad_labels_name_the_key_or_value(labels: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as err:
        job_labels(labels, "1")
    assert str(err.value) == message


def test_malformed_run_labels_are_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERTEX_AI_PIPELINES_RUN_LABELS", "[1]")
    with pytest.raises(
        ValueError, match=r"VERTEX_AI_PIPELINES_RUN_LABELS='\[1\]'; accepted: a JSON object"
    ):
        job_labels({}, "1")
