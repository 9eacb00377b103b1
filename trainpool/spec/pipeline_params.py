"""A compiled pipeline's parameters: ``--param NAME=VALUE`` typed by the pipeline's own inputs.

Both a local run (``trainpool run --local``, ``trainpool.kfp_local``) and ``trainpool submit``
read parameters this way, so the two agree on what a value means.

A compiled pipeline declares each input's ``parameterType`` under
``root.inputDefinitions.parameters``. A value is parsed as JSON where the type
needs it, then checked against that type, so ``--param workers=3`` stays the
integer 3 for a ``NUMBER_INTEGER`` input and the text ``"3"`` for a ``STRING``.
Strings are taken verbatim. Values that crossed a protobuf ``Value`` (where
every number is a double) are typed again with :func:`coerce_values`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from trainpool.errors import InputError, brief
from trainpool.spec import kfp_v1
from trainpool.spec.safe_load import load_json, load_yaml_file

_ACCEPTED = {
    "STRING": "any text (taken verbatim)",
    "NUMBER_INTEGER": "a whole number such as 3",
    "NUMBER_DOUBLE": "a number such as 0.5",
    "BOOLEAN": "true or false",
    "LIST": 'a JSON list such as ["a", 1]',
    "STRUCT": 'a JSON object such as {"key": 1}',
}


class ParamError(InputError):
    """One or more bad parameters; ``str()`` is one problem per line."""


def load_pipeline_document(
    path: str | Path, field: str = "PIPELINE"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(PipelineSpec, runtime config)`` of a compiled pipeline file (its first document),
    read by :mod:`trainpool.spec.safe_load`: the YAML kfp 2 writes (runtime config ``{}``)
    or the PipelineJob JSON kfp 1.8's v2 compiler writes (``pipelineSpec`` and
    ``runtimeConfig``, :mod:`trainpool.spec.kfp_v1`); an InputError naming ``field``
    otherwise."""
    document = load_yaml_file(path, field, first=True)
    spec, config = kfp_v1.unwrap(document) if isinstance(document, dict) else ({}, {})
    if spec.get("kind") == "Workflow" and str(spec.get("apiVersion", "")).startswith("argoproj"):
        raise InputError.of(
            field,
            f"{brief(str(path))} is an Argo Workflow, what kfp 1.x's v1 compiler "
            "(kfp.compiler.Compiler) writes for Kubeflow Pipelines, which neither Vertex AI "
            "Pipelines nor the emulator runs; accepted: the same pipeline compiled by kfp 1.8's "
            "v2 compiler (kfp.v2.compiler.Compiler, a PipelineJob JSON) or by kfp 2",
        )
    if "root" not in spec or "pipelineInfo" not in spec:
        raise InputError.of(
            field,
            f"{brief(str(path))} is not a compiled KFP pipeline; accepted: the YAML that `kfp` "
            "or `trainpool compile` writes (with 'pipelineInfo' and 'root'), or the JSON of "
            "kfp 1.8's v2 compiler (with 'pipelineSpec')",
        )
    return spec, config


def load_pipeline_spec(path: str | Path, field: str = "PIPELINE") -> dict[str, Any]:
    """The PipelineSpec of a compiled pipeline file (:func:`load_pipeline_document`)."""
    return load_pipeline_document(path, field)[0]


def pipeline_inputs(spec: Mapping[str, Any]) -> dict[str, str]:
    """``{parameter name: parameterType}`` of the pipeline's parameter inputs (kfp 1.8's
    ``type: INT`` read as ``NUMBER_INTEGER``, :data:`trainpool.spec.kfp_v1.TYPES`)."""
    params = spec.get("root", {}).get("inputDefinitions", {}).get("parameters", {})
    return {
        name: str(p.get("parameterType") or kfp_v1.TYPES.get(p.get("type", ""), "STRING"))
        for name, p in params.items()
    }


def pipeline_defaults(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The declared defaults, typed (an INT default is compiled as ``1.0``)."""
    params = spec.get("root", {}).get("inputDefinitions", {}).get("parameters", {})
    defaults = {name: p["defaultValue"] for name, p in params.items() if "defaultValue" in p}
    return coerce_values(defaults, pipeline_inputs(spec))


def parse_params(pairs: Iterable[str], inputs: Mapping[str, str]) -> dict[str, Any]:
    """Parse ``NAME=VALUE`` strings into typed values.

    Raises :class:`ParamError` listing every problem at once.
    """
    values: dict[str, Any] = {}
    problems: list[str] = []
    for pair in pairs:
        name, sep, text = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            problems.append(
                f"--param {brief(pair)}: expected NAME=VALUE, e.g. --param worker_count=2"
            )
            continue
        if name in values:
            problems.append(f"--param {name}: given twice; accepted: each parameter once")
            continue
        if name not in inputs:
            problems.append(_unknown(name, inputs))
            continue
        try:
            values[name] = _typed(inputs[name], text, from_text=True)
        except ValueError:
            problems.append(_wrong_type(name, text, inputs[name]))
    if problems:
        raise ParamError(problems)
    return values


def coerce_values(values: Mapping[str, Any], inputs: Mapping[str, str]) -> dict[str, Any]:
    """Type already-decoded values (e.g. from a protobuf ``Value``): ``3.0`` → ``3`` for INT."""
    typed: dict[str, Any] = {}
    problems: list[str] = []
    for name, value in values.items():
        if name not in inputs:
            problems.append(_unknown(name, inputs))
            continue
        try:
            typed[name] = _typed(inputs[name], value, from_text=False)
        except ValueError:
            problems.append(_wrong_type(name, value, inputs[name]))
    if problems:
        raise ParamError(problems)
    return typed


def _typed(kind: str, raw: Any, *, from_text: bool) -> Any:
    if kind == "STRING":
        if from_text or isinstance(raw, str):
            return str(raw)
        raise ValueError(kind)
    value = _json(raw) if from_text else raw
    check = _CHECKS.get(kind)
    if check is None:
        return value
    return check(value)


def _json(text: str) -> Any:
    try:
        return load_json(text, "value")
    except InputError:
        if text.strip().lower() in ("true", "false"):
            return text.strip().lower() == "true"
        return text


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("NUMBER_INTEGER")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError("NUMBER_INTEGER")
    return int(value)


def _double(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("NUMBER_DOUBLE")
    if not math.isfinite(float(value)):
        raise ValueError("NUMBER_DOUBLE")
    return float(value)


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("BOOLEAN")
    return value


def _of(kind: type, name: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not isinstance(value, kind):
            raise ValueError(name)
        return value

    return check


_CHECKS: dict[str, Callable[[Any], Any]] = {
    "NUMBER_INTEGER": _integer,
    "NUMBER_DOUBLE": _double,
    "BOOLEAN": _boolean,
    "LIST": _of(list, "LIST"),
    "STRUCT": _of(dict, "STRUCT"),
}


def _unknown(name: str, inputs: Mapping[str, str]) -> str:
    close = difflib.get_close_matches(name, list(inputs), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    accepted = ", ".join(sorted(inputs)) or "none (the pipeline takes no parameters)"
    shown = brief(name, quoted=False)
    return f"--param {shown}: the pipeline has no such parameter{hint}; accepted: {accepted}"


def _wrong_type(name: str, value: Any, kind: str) -> str:
    accepted = _ACCEPTED.get(kind, kind)
    shown = brief(value if isinstance(value, str) else str(value), quoted=False)
    return f"--param {brief(name, quoted=False)}={shown}: {name} is {kind}; accepted: {accepted}"
