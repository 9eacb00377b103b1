"""A study's fields beyond its metrics, parameters and algorithm, stated once.

Fields of aiplatform v1 ``study.proto`` whose own comment says "Currently only supported by
the Vertex AI Vizier service. Not supported by HyperparameterTuningJob or
TrainingPipeline" (``observationNoise``, the value specs' ``defaultValue``) are refused:
Vertex would not apply them to a tuning job. ``studyStoppingConfig`` (documented for
Vizier studies; nothing says whether tuning jobs honour it) is passed on with a warning.
The ``automated_stopping_spec`` oneof holds at most one rule, with its own fields only
(``minStepCount`` below ``maxStepCount``, ``learningRateParameterName`` one of the study's
parameters).
"""

from __future__ import annotations

import math
from typing import Any

from trainpool.plan.errors import Problem
from trainpool.spec.study import KINDS, STOPPING, STOPPING_FIELDS, enum_name

NOT_FOR_TUNING_JOBS = (
    "accepted: unset (study.proto: 'Currently only supported by the Vertex AI Vizier "
    "service. Not supported by HyperparameterTuningJob or TrainingPipeline.')"
)


def number(value: Any) -> float | None:
    try:
        parsed = float(value)
    except (TypeError, ValueError):
        return None
    return parsed if math.isfinite(parsed) and not isinstance(value, bool) else None


def check_fields(
    problems: list[Problem], study_spec: dict[str, Any], parameters: list[Any]
) -> None:
    """Refuse what tuning jobs do not support and a malformed ``automated_stopping_spec``."""
    noise = study_spec.get("observationNoise", 0)
    if enum_name("observationNoise", noise) != "OBSERVATION_NOISE_UNSPECIFIED":
        problems.append(Problem("studySpec.observationNoise", f"{noise!r}; {NOT_FOR_TUNING_JOBS}"))
    _stopping(problems, study_spec, all_ids(parameters))


def field_warnings(study_spec: dict[str, Any]) -> list[str]:
    """Fields passed on to Vertex whose effect there (or here) is not what one may expect."""
    warnings = []
    if study_spec.get("studyStoppingConfig") is not None:
        warnings.append(
            "studySpec.studyStoppingConfig is passed to Vertex unchanged, but whether a "
            "HyperparameterTuningJob honours it is not documented (study.proto describes it "
            "for Vizier studies), and the local emulator does not apply it"
        )
    stopping = [key for key in STOPPING.values() if key in study_spec]
    if stopping and len(study_spec.get("metrics", [])) > 1:
        warnings.append(
            f"studySpec.{stopping[0]} with {len(study_spec['metrics'])} metrics: Vizier's early "
            "stopping supports single-objective studies only; the emulator judges the first"
        )
    return warnings


def all_ids(parameters: list[Any]) -> set[str]:
    """Every parameter id, conditional ones included."""
    ids = set()
    for spec in parameters:
        if isinstance(spec, dict):
            ids.add(str(spec.get("parameterId")))
            inner = [c.get("parameterSpec") for c in spec.get("conditionalParameterSpecs", [])]
            ids |= all_ids([i for i in inner if isinstance(i, dict)])
    return ids


def _whole(value: Any) -> int | None:
    given = number(value)
    return int(given) if given is not None and given == int(given) and given >= 0 else None


def _stopping(problems: list[Problem], study_spec: dict[str, Any], ids: set[str]) -> None:
    """The ``automated_stopping_spec`` oneof: one rule, its own fields, sound numbers."""
    given = [key for key in STOPPING.values() if key in study_spec]
    if len(given) > 1:
        problems.append(
            Problem("studySpec", f"{given} given together; accepted: at most one (a oneof)")
        )
    for name, key in STOPPING.items():
        if key not in study_spec:
            continue
        field, spec = f"studySpec.{key}", study_spec[key]
        if not isinstance(spec, dict):
            problems.append(Problem(field, f"{spec!r}; accepted: a mapping ({{}}: the defaults)"))
            continue
        known = {rest: kind for rest, kind in STOPPING_FIELDS[name].values()}
        for sub, value in spec.items():
            kind = known.get(sub)
            if kind is None:
                problems.append(Problem(f"{field}.{sub}", f"unknown; accepted: {', '.join(known)}"))
            elif kind is int and _whole(value) is None:
                problems.append(
                    Problem(f"{field}.{sub}", f"{value!r}; accepted: a whole number >= 0")
                )
            elif kind is not int and not isinstance(value, kind):
                problems.append(Problem(f"{field}.{sub}", f"{value!r}; accepted: {KINDS[kind]}"))
        low, high = _whole(spec.get("minStepCount", 0)), _whole(spec.get("maxStepCount", 0))
        if low and high and low >= high:
            problems.append(
                Problem(f"{field}.minStepCount", f"{low} >= maxStepCount {high}; accepted: less")
            )
        lr = spec.get("learningRateParameterName", "")
        if isinstance(lr, str) and lr and lr not in ids:
            problems.append(
                Problem(
                    f"{field}.learningRateParameterName",
                    f"{lr!r} is not a parameter of the study; accepted: {', '.join(sorted(ids))}",
                )
            )
