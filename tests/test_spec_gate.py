"""The retraining gate's rules (trainpool.spec.gate): the comparison, the labels, the alias."""

from __future__ import annotations

import math

import pytest

from trainpool.errors import InputError
from trainpool.spec import gate


@pytest.mark.parametrize(
    ("goal", "challenger", "blessed", "least", "promote", "improvement", "winner"),
    [
        ("minimize", 0.40, 0.50, 0.0, True, 0.10, "challenger"),
        ("minimize", 0.55, 0.50, 0.0, False, -0.05, "blessed"),
        ("minimize", 0.50, 0.50, 0.0, False, 0.0, "tie"),
        ("maximize", 0.91, 0.90, 0.0, True, 0.01, "challenger"),
        ("maximize", 0.91, 0.90, 0.05, False, 0.01, "blessed"),  # under the least that counts
        ("maximize", 0.96, 0.90, 0.05, True, 0.06, "challenger"),
        ("maximize", 0.80, 0.90, 0.0, False, -0.10, "blessed"),
    ],
)
def test_only_a_model_better_by_the_least_improvement_promotes(
    goal: str,
    challenger: float,
    blessed: float,
    least: float,
    promote: bool,
    improvement: float,
    winner: str,
) -> None:
    verdict = gate.compare("m", goal, challenger, blessed, least)
    assert verdict.promote is promote
    assert verdict.improvement == pytest.approx(improvement)
    assert verdict.winner == winner
    line = verdict.describe()
    assert f"{challenger:g}" in line and f"blessed {blessed:g}" in line
    assert ("better" in line) == (improvement > 0) and ("worse" in line) == (improvement < 0)
    assert ("equal" in line) == (improvement == 0)


def test_the_first_run_of_a_new_model_promotes_and_a_nan_never_does() -> None:
    first = gate.compare("loss", "minimize", 9.0, None, 1.0)
    assert first.promote and first.winner == "challenger" and "first" in first.describe()
    with pytest.raises(InputError, match="finite"):
        gate.compare("loss", "minimize", math.nan, 0.5)


@pytest.mark.parametrize("value", [0.0, 0.4123, 1e-05, 1e20, -3.5, 0.1 + 0.2, 123456.789])
def test_a_metric_recorded_in_labels_reads_back_exactly(value: float) -> None:
    labels = gate.metric_labels("val_loss", "minimize", value)
    for text in labels.values():
        assert gate.LABEL_VALUE.fullmatch(text), text  # a valid label value
    assert gate.recorded(labels, "val_loss", "models/1@2") == value


def test_a_version_recording_another_metric_or_none_is_refused_naming_it() -> None:
    labels = gate.metric_labels("accuracy", "maximize", 0.9)
    with pytest.raises(InputError, match="models/1@2 records metric 'accuracy'.*not 'loss'"):
        gate.recorded(labels, "loss", "models/1@2")
    with pytest.raises(InputError, match="records no metric"):
        gate.recorded({"team": "ranking"}, "loss", "models/1@2")
    with pytest.raises(InputError, match="not a number"):
        gate.recorded({gate.METRIC_LABEL: "loss", gate.VALUE_LABEL: "inf"}, "loss", "v")


@pytest.mark.parametrize(
    "alias",
    [
        "default",  # Vertex's own
        "1blessed",  # "to distinguish from version_id"
        "Blessed",
        "b",  # two characters at least
        "blessed-",
        "bless ed",
        "blessed\x00",
        "blessed\n",
        "-blessed",  # MergeVersionAliases' removal syntax
        "../blessed",
        "blessed@2",
        "ble$sed",
        "bléssed",
        "b" * 129,
        "",
        7,
        None,
    ],
)
def test_hostile_aliases_are_refused_naming_the_rule(alias: object) -> None:
    with pytest.raises(InputError) as refused:
        gate.check("loss", "minimize", 0.0, alias, "keep")
    [problem] = refused.value.problems
    assert problem.field == "alias" and "[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]" in problem.message
    assert len(str(refused.value)) < 600 and "\n" not in str(refused.value)


@pytest.mark.parametrize("alias", ["blessed", "champion", "prod-v2", "aB9", "b" * 128])
def test_aliases_by_the_rule_are_accepted(alias: str) -> None:
    gate.check("loss", "minimize", 0.0, alias, "keep")


def test_every_bad_gate_parameter_is_named_at_once() -> None:
    with pytest.raises(InputError) as refused:
        gate.check("Val/Loss", "lower", -1, "default", "delete")
    fields = sorted(p.field for p in refused.value.problems)
    assert fields == ["alias", "goal", "metric", "min_improvement", "on_worse"]
    for bad in (math.nan, math.inf, True, "0.1"):
        with pytest.raises(InputError, match="min_improvement"):
            gate.check("loss", "minimize", bad, "blessed", "keep")
