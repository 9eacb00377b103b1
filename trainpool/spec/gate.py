"""The retraining gate's rules: does tonight's model beat the blessed version? (pure)

A scheduled retrain registers its model as a new version of the same Model, and moves the
alias (``blessed``) onto it, only when its metric beats the blessed version's by at least
``min_improvement`` in the metric's direction; an equal or worse model is kept as an
unpromoted version or not uploaded (``on_worse``). The first run of a new Model promotes.

Where the blessed version's metric is recorded: in the version's **labels**
(:func:`metric_labels`), with the value also in its ``version_description`` for people.
Labels are a version's own fields, read back by everything that reads the Model
(``aiplatform.Model("ID@blessed").labels``, the console, ``gcloud ai models describe``) and
filterable (``labels.trainpool-gate-metric=loss`` in ListModels/ListModelVersions); a
ModelEvaluation (ImportModelEvaluation) is Vertex's richer place, but needs an evaluation
schema per task type, and a description is free text people edit. A label value is at most
63 lowercase letters, digits, ``_`` and ``-`` (cloud.google.com/vertex-ai/docs/general/
resource-labels), so the value is written as its shortest exact ``repr`` with ``.`` as
``_`` (``0_4123``, ``1e-05``), read back exactly (:func:`label_value`, :func:`from_label`).

The alias rule is Vertex's (model.proto, ``Model.version_aliases``): ``[a-z][a-zA-Z0-9-]
{0,126}[a-z0-9]``, "to distinguish from version_id"; ``default`` is reserved: Vertex moves
it to the default version itself (model-alias guide), so the gate cannot own it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from trainpool.errors import InputError, Problem, brief

ALIAS = re.compile(r"[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]")
ALIAS_ACCEPTED = (
    "a version alias matches [a-z][a-zA-Z0-9-]{0,126}[a-z0-9] (Vertex's rule, model.proto: "
    "a lowercase letter, then letters, digits or '-', ending in a lowercase letter or a digit, "
    "2 to 128 characters), and is not 'default' (Vertex's own alias of the default version)"
)
RESERVED_ALIASES = ("default",)
GOALS = ("maximize", "minimize")
ON_WORSE = ("keep", "skip")
"""keep: register a worse or equal model as an unpromoted version; skip: do not upload it."""

LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")
METRIC_LABEL = "trainpool-gate-metric"
VALUE_LABEL = "trainpool-gate-value"
GOAL_LABEL = "trainpool-gate-goal"
RUN_LABEL = "trainpool-gate-run"
"""The run that registered the version (its pipeline job id, when that is a label value), so a
retried gate finds the version it registered instead of registering another."""


def alias_problems(alias: object, field: str = "alias") -> list[Problem]:
    """Why ``alias`` cannot be the gate's alias (none when it can)."""
    if not isinstance(alias, str) or not ALIAS.fullmatch(alias) or alias in RESERVED_ALIASES:
        why = f"{brief(alias)} is not an alias the gate may move; accepted: {ALIAS_ACCEPTED}"
        return [Problem(field, why)]
    return []


def check(
    metric: object, goal: object, min_improvement: object, alias: object, on_worse: object
) -> None:
    """Every problem with the gate's parameters, as one InputError (before anything runs)."""
    problems = alias_problems(alias)
    if not isinstance(metric, str) or not metric or not LABEL_VALUE.fullmatch(metric):
        problems.append(
            Problem(
                "metric",
                f"{brief(metric)} cannot be recorded in a version's labels; accepted: 1 to 63 "
                "lowercase letters, digits, '_' or '-' (a label value), as the trainer reports it",
            )
        )
    if goal not in GOALS:
        problems.append(Problem("goal", f"{brief(goal)}; accepted: {', '.join(GOALS)}"))
    if (
        isinstance(min_improvement, bool)
        or not isinstance(min_improvement, int | float)
        or not math.isfinite(min_improvement)
        or min_improvement < 0
    ):
        problems.append(
            Problem("min_improvement", f"{brief(min_improvement)}; accepted: a number >= 0")
        )
    if on_worse not in ON_WORSE:
        problems.append(
            Problem(
                "on_worse",
                f"{brief(on_worse)}; accepted: keep (an unpromoted version) or skip (no upload)",
            )
        )
    if problems:
        raise InputError(problems)


def label_value(value: float) -> str:
    """``value`` as a label value: its shortest exact repr, ``.`` as ``_``, no ``+``."""
    if not math.isfinite(value):
        raise InputError.of("metric", f"{value!r} is not a finite number; accepted: a finite value")
    return repr(float(value)).replace(".", "_").replace("+", "")


def from_label(text: str) -> float:
    """The number :func:`label_value` wrote (ValueError for anything else)."""
    value = float(text.replace("_", "."))
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite number")
    return value


def metric_labels(metric: str, goal: str, value: float, run: str = "") -> dict[str, str]:
    """The labels that record a version's ``metric`` (its goal, its exact value) and the
    run that registered it (left out when ``run`` is not a label value)."""
    labels = {METRIC_LABEL: metric, GOAL_LABEL: goal, VALUE_LABEL: label_value(value)}
    if run and LABEL_VALUE.fullmatch(run):
        labels[RUN_LABEL] = run
    return labels


def recorded(labels: dict[str, str], metric: str, where: str) -> float:
    """The value of ``metric`` that a version's ``labels`` record; InputError naming
    ``where`` (the version) when they record none, or another metric."""
    if labels.get(METRIC_LABEL) != metric or VALUE_LABEL not in labels:
        said = labels.get(METRIC_LABEL)
        found = f"records metric {said!r}" if said else "records no metric"
        raise InputError.of(
            "metric",
            f"{where} {found} in its labels, not {metric!r}; accepted: the metric the blessed "
            f"version was gated on, or label it: {METRIC_LABEL}={metric}, "
            f"{VALUE_LABEL}=<value, '.' as '_'>",
        )
    try:
        return from_label(labels[VALUE_LABEL])
    except ValueError:
        raise InputError.of(
            "metric", f"{where}: label {VALUE_LABEL}={labels[VALUE_LABEL]!r} is not a number"
        ) from None


@dataclass(frozen=True)
class Verdict:
    """The comparison: ``improvement`` is how much the challenger beats the blessed value in
    the goal's direction (negative: worse); ``promote`` when there is no blessed value, or
    the improvement is positive and at least ``min_improvement``."""

    metric: str
    goal: str
    challenger: float
    blessed: float | None
    improvement: float
    promote: bool

    @property
    def winner(self) -> str:
        if self.promote:
            return "challenger"
        return "tie" if self.improvement == 0 else "blessed"

    def describe(self) -> str:
        """One line: which won and by how much."""
        if self.blessed is None:
            return f"{self.metric} {self.challenger:g}: no blessed version yet, the first promotes"
        sign = "<" if self.goal == "minimize" else ">"
        if self.promote:
            return (
                f"{self.metric} {self.challenger:g} {sign} blessed {self.blessed:g}: better "
                f"by {self.improvement:g}"
            )
        if self.improvement == 0:
            return f"{self.metric} {self.challenger:g} = blessed {self.blessed:g}: equal"
        if self.improvement < 0:
            return (
                f"{self.metric} {self.challenger:g} vs blessed {self.blessed:g}: worse "
                f"by {-self.improvement:g}"
            )
        return (
            f"{self.metric} {self.challenger:g} vs blessed {self.blessed:g}: better by only "
            f"{self.improvement:g}, under the least improvement that counts"
        )


def compare(
    metric: str, goal: str, challenger: float, blessed: float | None, min_improvement: float = 0.0
) -> Verdict:
    """Challenger against the blessed value (None: no blessed version, which promotes)."""
    if not math.isfinite(challenger):
        raise InputError.of(
            "metric", f"the run's {metric} is {challenger!r}; accepted: a finite value"
        )
    if blessed is None:
        return Verdict(metric, goal, challenger, None, 0.0, True)
    improvement = challenger - blessed if goal == "maximize" else blessed - challenger
    promote = improvement > 0 and improvement >= min_improvement
    return Verdict(metric, goal, challenger, blessed, improvement, promote)
