"""plan.label_rules: Vertex's label rules, one statement for planner, launcher and emulator.
(The property test against Google's own regular expressions is in test_hostile_input.py.)"""

from __future__ import annotations

import pytest

from trainpool.plan.label_rules import MAX_LABELS, label_problems


@pytest.mark.parametrize(
    "labels",
    [
        {},
        {"team": "", "équipe": "données", "てすと": "機械学習", "goog-x": "1"},
        {"k" * 63: "v" * 63},
        {f"k{n}": "v" for n in range(MAX_LABELS)},
        {"trainpool-task": "h-" + "0" * 40, "trainpool-local-run": "20240101-120000-1-99"},
    ],
)
def test_accepted(labels: dict[str, str]) -> None:
    assert label_problems(labels) == []


@pytest.mark.parametrize(
    ("labels", "said"),
    [
        ({"Team": "x"}, "labels: key 'Team'; accepted: a key of 1-63"),
        ({"": "x"}, "labels: an empty key"),
        ({"k" * 64: "x"}, "has 64 characters"),
        ({"1a": "x"}, "key '1a'"),
        ({"aiplatform.googleapis.com/x": "y"}, "reserved for Vertex's system labels"),
        ({"team": "A"}, "labels.team: value 'A'"),
        ({"team": "v" * 20_000_000}, "(20,000,000 characters) has 20,000,000 characters"),
        ({f"k{n}": "v" for n in range(65)}, "labels: 65 labels; accepted: at most 64"),
    ],
)
def test_refused_naming_field_value_and_rule(labels: dict[str, str], said: str) -> None:
    shown = "\n".join(str(p) for p in label_problems(labels))
    assert said in shown
    assert len(shown) < 1000


def test_many_bad_labels_are_named_a_few_then_counted() -> None:
    problems = label_problems({f"K{n}": "v" for n in range(20)})
    assert len(problems) == 6 and str(problems[-1]) == "labels: and 15 more labels like these"
