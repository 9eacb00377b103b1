"""The Logging query language as Cloud Logging defines it
(https://cloud.google.com/logging/docs/view/logging-query-language), on entries shaped as
Vertex writes a training job's lines."""

from __future__ import annotations

import pytest

from trainpool.emulator.cloud_logging.query import matches, parse, required
from trainpool.errors import InputError

ENTRY = {
    "logName": "projects/demo/logs/workerpool0-0",
    "resource": {
        "type": "ml_job",
        "labels": {"job_id": "1234", "project_id": "demo", "task_name": "workerpool0-0"},
    },
    "timestamp": "2026-11-26T14:57:02.307558Z",
    "severity": "ERROR",
    "insertId": "0-workerpool0-0-000000000040",
    "jsonPayload": {"message": "Epoch 3: loss=0.25", "levelname": "ERROR"},
    "labels": {"ml.googleapis.com/trial_id": "3"},
}


def holds(query: str) -> bool:
    return matches(parse(query), ENTRY)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('resource.type="ml_job" resource.labels.job_id="1234"', True),  # side by side: AND
        ('resource.type="ml_job" AND resource.labels.job_id="999"', False),
        ('resource.labels.task_name="workerpool1-0" OR severity=ERROR', True),
        ("severity>=WARNING", True),
        ("severity<ERROR", False),
        ("severity>=400", True),  # numbers rank as the enum's (ERROR is 500)
        ('jsonPayload.message:"LOSS"', True),  # has, and "String comparisons aren't case sensitive"
        ('jsonPayload.message="epoch 3: loss=0.25"', True),
        ('NOT jsonPayload.message:"loss"', False),
        ('-jsonPayload.message:"accuracy"', True),
        ('labels."ml.googleapis.com/trial_id"="3"', True),
        ('resource.type = ("gce_instance" OR "ml_job")', True),
        ('resource.type = ("gce_instance" OR "k8s_container")', False),
        ('jsonPayload.message=~"^Epoch [0-9]+:"', True),
        ('jsonPayload.message!~"Epoch"', False),
        ('"loss=0.25"', True),  # a global restriction: any field has it
        ('timestamp>="2026-11-26T14:57:00Z" AND timestamp<"2026-11-26T15:57:03+01:00"', True),
        ('timestamp>"2026-11-26T14:57:02.307558Z"', False),
        # gcloud's stream-logs lower bound (googlecloudsdk/command_lib/logs/stream.py)
        (
            '((timestamp="2026-11-26T14:57:02.307558Z" AND insertId>"0-workerpool0-0-00000000003f")'
            ' OR timestamp>"2026-11-26T14:57:02.307558Z")',
            True,
        ),
        ('jsonPayload.missing="x"', False),
        ('jsonPayload.missing!="x"', True),
    ],
)
def test_a_query_matches_as_cloud_logging_says(query: str, expected: bool) -> None:
    assert holds(query) is expected


def test_not_binds_tightest_then_or_then_and() -> None:
    # "a OR NOT b AND NOT c OR d" is "(a OR (NOT b)) AND ((NOT c) OR d)" (the language's
    # own example); with a, c and d false and b true the AND of the two ORs is false,
    # where left-to-right AND-before-OR reading would give true for "NOT c OR d".
    entry = {"a": "0", "b": "1", "c": "0", "d": "0"}
    query = "a=1 OR NOT b=1 AND NOT c=1 OR d=1"
    assert matches(parse(query), entry) is False  # type: ignore[arg-type]
    assert matches(parse("(a=1 OR NOT b=1) AND (NOT c=1 OR d=1)"), entry) is False  # type: ignore[arg-type]
    assert matches(parse("a=1 OR (NOT b=1 AND NOT c=1) OR d=1"), entry) is False  # type: ignore[arg-type]
    entry["a"] = "1"
    assert matches(parse(query), entry) is True  # type: ignore[arg-type]


def test_a_job_id_pinned_at_the_top_narrows_what_is_read() -> None:
    assert required(
        parse('resource.type="ml_job" resource.labels.job_id="7"'), "resource.labels.job_id"
    ) == {"7"}
    assert required(parse('resource.labels.job_id=("7" OR "8")'), "resource.labels.job_id") == {
        "7",
        "8",
    }
    assert (
        required(parse('resource.labels.job_id="7" OR severity=ERROR'), "resource.labels.job_id")
        is None
    )
    assert required(parse('NOT resource.labels.job_id="7"'), "resource.labels.job_id") is None
    assert required(parse(""), "resource.labels.job_id") is None


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ('SEARCH("loss")', "the function SEARCH() is not evaluated"),
        ("severity>=LOUD", "severity 'LOUD'; accepted: DEFAULT, DEBUG, INFO"),
        ('timestamp>="yesterday"', "an RFC 3339 time"),
        ("resource.type=", "ends too soon"),
        ("(severity=ERROR", "ends too soon"),
        ("severity=ERROR)", "unexpected ')'"),
        ("(" * 40 + "a=1" + ")" * 40, "nested deeper than 32"),
        ("x" * 20_001, "accepted: at most 20,000"),
    ],
)
def test_a_query_the_emulator_cannot_read_is_refused_naming_why(query: str, said: str) -> None:
    with pytest.raises(InputError) as raised:
        parse(query)
    assert raised.value.problems[0].field == "filter"
    assert said in str(raised.value)
