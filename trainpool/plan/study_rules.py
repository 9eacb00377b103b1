"""The rules of a Vertex hyperparameter study, stated once.

``validate_study`` takes a ``StudySpec`` in REST JSON (camelCase; enums as names
or proto numbers; int64 as numbers or strings) and the trial counts. The
``hyperparameter_sweep`` component calls it before submitting, and the emulator
calls it to answer INVALID_ARGUMENT, so the two can never disagree.

The study's other fields (early stopping, fields tuning jobs do not support) are
:mod:`trainpool.plan.study_field_rules`.
"""

from __future__ import annotations

from typing import Any

from trainpool.errors import brief
from trainpool.plan.errors import PlanError, Problem
from trainpool.plan.study_field_rules import (
    NOT_FOR_TUNING_JOBS,
    check_fields,
    field_warnings,
    number,
)
from trainpool.spec.study import ENUM_NUMBERS, VALUE_SPECS, bound, enum_name

MAX_DISCRETE_VALUES = 1000
MAX_TRIALS = 1000
"""Vertex publishes no maximum for ``maxTrialCount``; its Vizier service, which runs the
study, documents "Maximum number of trials in a study: 1,000" (AI Platform Vizier quotas,
https://cloud.google.com/ai-platform/optimizer/docs/quotas), and that bound is used."""
MIN_DISCRETE_GAP = 1e-10
_LOG_SCALES = ("UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE")
_GOALS = ("MAXIMIZE", "MINIMIZE")


def _enum(
    problems: list[Problem], field: str, key: str, value: Any, allowed: tuple[str, ...]
) -> str:
    name = enum_name(key, value)
    if name not in allowed:
        problems.append(
            Problem(field, f"{value!r} is not accepted; accepted: {', '.join(allowed)}")
        )
    return name


def _range(problems: list[Problem], field: str, spec: Any, scale: str, integer: bool) -> None:
    if not isinstance(spec, dict):
        problems.append(Problem(field, f"{spec!r}; accepted: {{'minValue': N, 'maxValue': M}}"))
        return
    low, high = number(bound(spec, "minValue")), number(bound(spec, "maxValue"))
    if low is None or high is None:
        problems.append(
            Problem(
                field,
                f"minValue {brief(bound(spec, 'minValue'))}, maxValue "
                f"{brief(bound(spec, 'maxValue'))}; accepted: finite numbers",
            )
        )
        return
    if integer and (low != int(low) or high != int(high)):
        problems.append(Problem(field, f"{low} to {high}; accepted: whole numbers"))
    if low >= high:
        problems.append(Problem(field, f"minValue {low} >= maxValue {high}; accepted: min < max"))
    if scale in _LOG_SCALES and low <= 0:
        problems.append(
            Problem(
                f"{field}.minValue",
                f"{low} with {scale}; accepted: > 0 (log needs a positive range)",
            )
        )


def _discrete(problems: list[Problem], field: str, spec: Any, scale: str) -> None:
    values = spec.get("values") if isinstance(spec, dict) else None
    numbers = [number(v) for v in values] if isinstance(values, list) else []
    if not numbers or None in numbers:
        problems.append(
            Problem(f"{field}.values", f"{values!r}; accepted: a non-empty list of numbers")
        )
        return
    if len(numbers) > MAX_DISCRETE_VALUES:
        problems.append(
            Problem(
                f"{field}.values", f"{len(numbers)} values; accepted: at most {MAX_DISCRETE_VALUES}"
            )
        )
    pairs = zip(numbers, numbers[1:], strict=False)
    if any(b is None or a is None or b - a < MIN_DISCRETE_GAP for a, b in pairs):
        problems.append(
            Problem(
                f"{field}.values",
                f"{values!r}; accepted: increasing, at least {MIN_DISCRETE_GAP} apart",
            )
        )
    if scale in _LOG_SCALES and min(n for n in numbers if n is not None) <= 0:
        problems.append(Problem(f"{field}.values", f"{values!r} with {scale}; accepted: all > 0"))


def _categorical(problems: list[Problem], field: str, spec: Any, scale: str) -> None:
    values = spec.get("values") if isinstance(spec, dict) else None
    ok = isinstance(values, list) and values and all(isinstance(v, str) and v for v in values)
    if not ok:
        problems.append(
            Problem(
                f"{field}.values", f"{values!r}; accepted: a non-empty list of non-empty strings"
            )
        )
    elif isinstance(values, list) and len(set(values)) != len(values):
        problems.append(Problem(f"{field}.values", f"{values!r}; accepted: distinct values"))
    if scale != "SCALE_TYPE_UNSPECIFIED":
        problems.append(Problem(f"{field}.scaleType", f"{scale}; accepted: unset for CATEGORICAL"))


def _parameter(problems: list[Problem], field: str, spec: Any, kinds: list[str]) -> str:
    if not isinstance(spec, dict):
        problems.append(Problem(field, f"{spec!r}; accepted: a ParameterSpec mapping"))
        return ""
    pid = spec.get("parameterId")
    if not isinstance(pid, str) or not pid.strip():
        problems.append(Problem(f"{field}.parameterId", f"{pid!r}; accepted: a non-empty string"))
    given = [key for key in VALUE_SPECS.values() if key in spec]
    if len(given) != 1:
        accepted = "exactly one of " + ", ".join(VALUE_SPECS.values())
        problems.append(Problem(field, f"value specs {given}; accepted: {accepted}"))
        return str(pid)
    key = given[0]
    kinds.append(key)
    if isinstance(spec[key], dict) and "defaultValue" in spec[key]:
        problems.append(
            Problem(
                f"{field}.{key}.defaultValue",
                f"{spec[key]['defaultValue']!r}; {NOT_FOR_TUNING_JOBS}",
            )
        )
    scale = enum_name("scaleType", spec.get("scaleType", "SCALE_TYPE_UNSPECIFIED"))
    if scale not in ENUM_NUMBERS["scaleType"].values():
        accepted = ", ".join(ENUM_NUMBERS["scaleType"].values())
        problems.append(Problem(f"{field}.scaleType", f"{scale!r}; accepted: {accepted}"))
    sub = f"{field}.{key}"
    if key == "doubleValueSpec":
        _range(problems, sub, spec[key], scale, integer=False)
    elif key == "integerValueSpec":
        _range(problems, sub, spec[key], scale, integer=True)
    elif key == "discreteValueSpec":
        _discrete(problems, sub, spec[key], scale)
    else:
        _categorical(problems, sub, spec[key], scale)
    for i, cond in enumerate(spec.get("conditionalParameterSpecs", [])):
        inner = cond.get("parameterSpec") if isinstance(cond, dict) else None
        _parameter(problems, f"{field}.conditionalParameterSpecs[{i}].parameterSpec", inner, kinds)
    return str(pid)


def _where(index: int, spec: Any) -> str:
    pid = spec.get("parameterId") if isinstance(spec, dict) else None
    return f"studySpec.parameters[{pid if isinstance(pid, str) and pid else index}]"


def _unique(problems: list[Problem], field: str, ids: list[str]) -> None:
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        problems.append(Problem(field, f"{repeated} given more than once; accepted: distinct ids"))


def _counts(problems: list[Problem], max_trials: int, parallel: int, max_failed: int) -> None:
    if not 1 <= max_trials <= MAX_TRIALS:
        problems.append(
            Problem(
                "maxTrialCount",
                f"{max_trials}; accepted: 1 to {MAX_TRIALS} (Vizier's limit of trials in a study)",
            )
        )
    if not 1 <= parallel <= max(max_trials, 1):
        problems.append(
            Problem(
                "parallelTrialCount", f"{parallel}; accepted: 1 to maxTrialCount ({max_trials})"
            )
        )
    if not 0 <= max_failed <= max(max_trials, 0):
        problems.append(
            Problem(
                "maxFailedTrialCount", f"{max_failed}; accepted: 0 to maxTrialCount ({max_trials})"
            )
        )


def grid_size(study_spec: dict[str, Any]) -> int | None:
    """How many points a grid over the top-level parameters has (None when one is DOUBLE)."""
    size = 1
    for spec in study_spec.get("parameters", []):
        if "doubleValueSpec" in spec:
            return None
        if "integerValueSpec" in spec:
            bounds = spec["integerValueSpec"]
            size *= (
                int(float(bound(bounds, "maxValue"))) - int(float(bound(bounds, "minValue"))) + 1
            )
        else:
            key = "discreteValueSpec" if "discreteValueSpec" in spec else "categoricalValueSpec"
            size *= len(spec[key]["values"])
    return size


def validate_study(
    study_spec: dict[str, Any],
    *,
    max_trial_count: int,
    parallel_trial_count: int,
    max_failed_trial_count: int = 0,
) -> list[str]:
    """Check a ``StudySpec`` (REST JSON) and the trial counts.

    Returns warnings; raises ``PlanError`` listing every problem found.
    """
    problems: list[Problem] = []
    if not isinstance(study_spec, dict):
        raise PlanError([Problem("studySpec", f"{study_spec!r}; accepted: a StudySpec mapping")])
    metrics = study_spec.get("metrics")
    if not isinstance(metrics, list) or not metrics:
        problems.append(Problem("studySpec.metrics", f"{metrics!r}; accepted: a non-empty list"))
        metrics = []
    metric_ids = []
    for i, metric in enumerate(metrics):
        field = f"studySpec.metrics[{i}]"
        metric = metric if isinstance(metric, dict) else {}
        mid = metric.get("metricId")
        if not isinstance(mid, str) or not mid.strip():
            problems.append(Problem(f"{field}.metricId", f"{mid!r}; accepted: a non-empty string"))
        metric_ids.append(str(mid))
        _enum(problems, f"{field}.goal", "goal", metric.get("goal"), _GOALS)
    _unique(problems, "studySpec.metrics", metric_ids)
    parameters = study_spec.get("parameters")
    if not isinstance(parameters, list) or not parameters:
        problems.append(
            Problem("studySpec.parameters", f"{parameters!r}; accepted: a non-empty list")
        )
        parameters = []
    kinds: list[str] = []
    ids = [_parameter(problems, _where(i, p), p, kinds) for i, p in enumerate(parameters)]
    _unique(problems, "studySpec.parameters", ids)
    algorithm = _enum(
        problems,
        "studySpec.algorithm",
        "algorithm",
        study_spec.get("algorithm", 0),
        tuple(ENUM_NUMBERS["algorithm"].values()),
    )
    if algorithm == "GRID_SEARCH" and "doubleValueSpec" in kinds:
        doubles = [p.get("parameterId") for p in parameters if "doubleValueSpec" in p]
        problems.append(
            Problem(
                "studySpec.algorithm",
                f"GRID_SEARCH with DOUBLE parameters {doubles}; accepted: "
                "INTEGER, DISCRETE or CATEGORICAL parameters only (or RANDOM_SEARCH)",
            )
        )
    if "measurementSelectionType" in study_spec:
        _enum(
            problems,
            "studySpec.measurementSelectionType",
            "measurementSelectionType",
            study_spec["measurementSelectionType"],
            tuple(ENUM_NUMBERS["measurementSelectionType"].values()),
        )
    check_fields(problems, study_spec, parameters)
    _counts(problems, int(max_trial_count), int(parallel_trial_count), int(max_failed_trial_count))
    if problems:
        raise PlanError(problems)
    return _warnings(study_spec, algorithm, int(max_trial_count), len(parameters))


def _warnings(
    study_spec: dict[str, Any], algorithm: str, max_trials: int, n_params: int
) -> list[str]:
    warnings = field_warnings(study_spec)
    size = grid_size(study_spec)
    if algorithm == "GRID_SEARCH" and size is not None and max_trials > size:
        warnings.append(f"maxTrialCount {max_trials} exceeds the {size} points of the grid")
    if algorithm == "GRID_SEARCH" and size is not None and max_trials < size:
        warnings.append(f"maxTrialCount {max_trials} covers only part of the {size}-point grid")
    if algorithm == "ALGORITHM_UNSPECIFIED" and max_trials < 10 * n_params:
        warnings.append(
            f"maxTrialCount {max_trials} is under 10 x {n_params} parameters, "
            "the guidance for Bayesian optimisation"
        )
    return warnings
