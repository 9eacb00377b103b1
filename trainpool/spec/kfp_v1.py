"""Pipelines compiled by kfp 1.8's v2 compiler (PipelineSpec ``schemaVersion`` 2.0.0), read
as Vertex AI Pipelines reads them.

kfp 1.8 (``from kfp.v2 import compiler``) writes a PipelineJob JSON: ``{"pipelineSpec": ...,
"runtimeConfig": {"parameters": {NAME: {"stringValue"|"intValue"|"doubleValue": ...}}}}``,
the spec at ``schemaVersion`` 2.0.0, its parameters typed ``type: STRING|INT|DOUBLE`` (a
``bool``, ``list`` or ``dict`` input is a STRING holding JSON), constants as
``runtimeValue.constantValue.stringValue``, conditions as
``inputs.parameters['pipelineparam--X'].string_value == 'y'``, and its Python components run
``kfp.v2.components.executor_main``, which reads ``inputs.parameters[NAME].stringValue``
(``intValue``, ``doubleValue``) from its executor input. kfp 2 writes ``schemaVersion``
2.1.0: ``parameterType: STRING|NUMBER_INTEGER|NUMBER_DOUBLE|BOOLEAN|LIST|STRUCT``,
``runtimeValue.constant``, ``inputs.parameter_values[...]`` and ``parameterValues``.

Which runtime field binds a run's parameters follows the spec's schema version, on Vertex
and in its SDK:

- ``PipelineJob.RuntimeConfig.parameters`` (aiplatform v1 ``pipeline_job.proto``):
  "Deprecated. Use RuntimeConfig.parameter_values instead. ... This field is used by
  pipelines built using ``PipelineJob.pipeline_spec.schema_version`` 2.0.0 or lower, such as
  pipelines built using Kubeflow Pipelines SDK 1.8 or lower"; ``parameter_values``: "This field
  is used by pipelines built using ``PipelineJob.pipeline_spec.schema_version`` 2.1.0, such as
  pipelines built using Kubeflow Pipelines SDK 1.9 or higher and the v2 DSL".
- The Vertex AI SDK sends ``parameters`` (typed Values) for a schema version <= 2.0.0 and
  ``parameterValues`` above it, never both (google-cloud-aiplatform
  ``google/cloud/aiplatform/utils/pipeline_utils.py``,
  ``PipelineRuntimeConfigBuilder.build`` and ``_get_vertex_value``: ``INT`` → ``intValue``,
  ``DOUBLE`` → ``doubleValue``, ``STRING`` → ``stringValue``; ``update_runtime_parameters``
  JSON-dumps a ``dict``, ``list`` or ``bool`` for 2.0.0). Reading a compiled job file,
  ``_parse_runtime_parameters`` takes ``parameterValues`` when present, else ``parameters``
  ("'parameters' are deprecated in IR and changed to 'parameterValues'").
- A runtime config whose field does not match the spec's schema version fails on Vertex:
  "Vertex AI's PipelineJob.RuntimeConfig binds parameters via different fields depending on
  pipelineSpec.schemaVersion: <= 2.0.0 uses RuntimeConfig.Parameters (deprecated), >= 2.1.0
  uses RuntimeConfig.ParameterValues ... Vertex failed the job with INTERNAL_ERROR because the
  runtime config and the submitted pipelineSpec disagreed" (sky-uk/kfp-operator pull request
  #1277, which moves ``Parameters`` onto ``ParameterValues`` for 2.1.0 specs).

So :func:`runtime_values` takes the field the schema binds and refuses the other one, set
alone or beside it, naming both (the emulator refuses at create what Vertex fails at run).

A local run executes with kfp.local (kfp 2), which reads the 2.1.0 shape only, so a 2.0.0
spec is first rewritten into it by :func:`upgrade` (the same tasks, inputs and outputs; types
and constants in the new spelling), and each kfp 1.8 component is given its inputs in the
shape its executor reads (:func:`v1_parameters`).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any

from trainpool.errors import InputError, brief

NEWEST_V1 = (2, 0, 0)
"""The newest ``schemaVersion`` whose parameters are ``RuntimeConfig.parameters``."""
TYPES = {"STRING": "STRING", "INT": "NUMBER_INTEGER", "DOUBLE": "NUMBER_DOUBLE"}
"""kfp 1.8's ``PrimitiveType`` → kfp 2's ``ParameterType`` (pipeline_spec.proto)."""
VALUE_KEYS = {"intValue": "INT", "doubleValue": "DOUBLE", "stringValue": "STRING"}
V1_EXECUTOR = "kfp.v2.components.executor_main"
"""The module a kfp 1.8 Python component (``kfp.v2.dsl.component``) runs."""
_CONDITION = re.compile(r"inputs\.parameters\['([^']+)'\]\.(string_value|int_value|double_value)")
_CAST = {"string_value": "{}", "int_value": "int({})", "double_value": "float({})"}


def schema_version(spec: Mapping[str, Any]) -> tuple[int, ...]:
    """The spec's ``schemaVersion`` as numbers (``(2, 1, 0)``); ``()`` when it has none."""
    text = str(spec.get("schemaVersion", ""))
    try:
        return tuple(int(part) for part in text.split("."))
    except ValueError:
        return ()


def is_v1(spec: Mapping[str, Any]) -> bool:
    """Whether ``spec`` is a PipelineSpec of schema 2.0.0 or lower (kfp 1.8's v2 compiler)."""
    version = schema_version(spec)
    return bool(version) and version <= NEWEST_V1


def unwrap(document: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(pipeline spec, runtime config)`` of a compiled file: kfp 1.8 writes a PipelineJob
    (``pipelineSpec`` and ``runtimeConfig``), kfp 2 a PipelineSpec (runtime config ``{}``)."""
    if "pipelineSpec" in document and "root" not in document:
        spec = document.get("pipelineSpec")
        config = document.get("runtimeConfig") or {}
        return (dict(spec) if isinstance(spec, Mapping) else {}), (
            dict(config) if isinstance(config, Mapping) else {}
        )
    return dict(document), {}


def value_of(value: Mapping[str, Any], field: str) -> Any:
    """The Python value of a ``google.cloud.aiplatform.v1.Value`` as JSON
    (``{"intValue": "3"}`` → 3: int64 is a JSON string)."""
    kinds = [key for key in VALUE_KEYS if key in value] if isinstance(value, Mapping) else []
    if len(kinds) != 1:
        raise InputError.of(
            field,
            f"{brief(str(value), 200)}; accepted: a Value with one of intValue, doubleValue, "
            "stringValue",
        )
    raw = value[kinds[0]]
    try:
        if kinds[0] == "intValue":
            return int(raw)
        if kinds[0] == "doubleValue":
            return float(raw)
    except (TypeError, ValueError):
        raise InputError.of(f"{field}.{kinds[0]}", f"{brief(str(raw))} is not a number") from None
    return str(raw)


def runtime_values(
    spec: Mapping[str, Any], config: Mapping[str, Any], field: str = "pipeline_job.runtime_config"
) -> dict[str, Any]:
    """The run's parameters from ``config`` (a RuntimeConfig as JSON), taken from the field
    ``spec``'s schema version binds (module docstring); the other field, if set, is refused."""
    values = config.get("parameterValues") or {}
    parameters = config.get("parameters") or {}
    shown = ".".join(str(v) for v in schema_version(spec)) or "none"
    if is_v1(spec):
        if values:
            raise InputError.of(
                f"{field}.parameter_values",
                f"{brief(', '.join(sorted(values)), 200, quoted=False)} given for a pipeline of "
                f"schemaVersion {shown} (kfp 1.8), whose parameters Vertex binds from "
                "runtime_config.parameters only (pipeline_job.proto); accepted: parameters, "
                "each a Value (stringValue, intValue, doubleValue)",
            )
        return {
            name: value_of(value, f"{field}.parameters[{name!r}]")
            for name, value in parameters.items()
        }
    if parameters:
        raise InputError.of(
            f"{field}.parameters",
            f"{brief(', '.join(sorted(parameters)), 200, quoted=False)} given for a pipeline "
            f"of schemaVersion {shown}: 'Deprecated. Use RuntimeConfig.parameter_values "
            "instead' (pipeline_job.proto), used only by schemaVersion 2.0.0 or lower (kfp "
            "1.8); Vertex fails such a run; accepted: parameter_values",
        )
    return dict(values)


def _upgrade_parameters(definitions: dict[str, Any], where: str) -> None:
    for name, parameter in definitions.items():
        if not isinstance(parameter, dict) or "parameterType" in parameter:
            continue
        old = parameter.pop("type", "STRING")
        if old not in TYPES:
            raise InputError.of(
                f"{where}.parameters[{name!r}].type",
                f"{brief(str(old))}; accepted: one of {', '.join(TYPES)} (kfp 1.8's types)",
            )
        parameter["parameterType"] = TYPES[old]
        if "defaultValue" in parameter and isinstance(parameter["defaultValue"], Mapping):
            parameter["defaultValue"] = value_of(parameter["defaultValue"], where)


def _artifact_type(artifact_type: dict[str, Any]) -> None:
    """An ``instanceSchema`` (a kfp 1.8 type named in YAML) becomes the schemaTitle it names:
    ``title: system.Model`` → ``system.Model``; another title is a plain ``system.Artifact``,
    as kfp's own ``type_utils`` treats an unknown type."""
    schema = artifact_type.pop("instanceSchema", None)
    if schema is None or "schemaTitle" in artifact_type:
        return
    found = re.search(r"^title:\s*(\S+)", str(schema), re.MULTILINE)
    title = found.group(1) if found else ""
    if not (title.startswith("system.") or title.startswith("google.")):
        title = "system.Artifact"
    artifact_type["schemaTitle"] = title
    artifact_type.setdefault("schemaVersion", "0.0.1")


def _upgrade_definitions(component: dict[str, Any], where: str) -> None:
    for side in ("inputDefinitions", "outputDefinitions"):
        definitions = component.get(side, {})
        _upgrade_parameters(definitions.get("parameters", {}), f"{where}.{side}")
        for artifact in definitions.get("artifacts", {}).values():
            if isinstance(artifact, dict) and isinstance(artifact.get("artifactType"), dict):
                _artifact_type(artifact["artifactType"])


def _upgrade_task(task: dict[str, Any]) -> None:
    for argument in task.get("inputs", {}).get("parameters", {}).values():
        runtime = argument.get("runtimeValue") if isinstance(argument, dict) else None
        if isinstance(runtime, dict) and "constantValue" in runtime:
            constant = runtime.pop("constantValue")
            runtime["constant"] = value_of(constant, "runtimeValue.constantValue")
    policy = task.get("triggerPolicy", {})
    if isinstance(policy, dict) and policy.get("condition"):
        policy["condition"] = upgrade_condition(str(policy["condition"]))


def upgrade_condition(condition: str) -> str:
    """A kfp 1.8 condition in kfp 2's spelling, which kfp.local evaluates:
    ``inputs.parameters['X'].int_value`` → ``int(inputs.parameter_values['X'])``."""

    def new(found: re.Match[str]) -> str:
        return _CAST[found.group(2)].format(f"inputs.parameter_values['{found.group(1)}']")

    return _CONDITION.sub(new, condition)


def _renamed(value: Any) -> Any:
    """kfp 1.8 names a value passed into a sub-DAG ``pipelineparam--X``; kfp 2 (and kfp.local's
    condition evaluator, which parses the names) ``pipelinechannel--X``."""
    if isinstance(value, str):
        return value.replace("pipelineparam--", "pipelinechannel--")
    if isinstance(value, list):
        return [_renamed(v) for v in value]
    if isinstance(value, dict):
        return {_renamed(k): _renamed(v) for k, v in value.items()}
    return value


def upgrade(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A schemaVersion 2.0.0 PipelineSpec in the 2.1.0 shape kfp.local runs (module
    docstring); a newer spec unchanged (a copy). Raises :class:`InputError` naming what a
    2.0.0 spec holds that has no 2.1.0 equivalent."""
    new: dict[str, Any] = copy.deepcopy(dict(spec))
    if not is_v1(spec):
        return new
    new = _renamed(new)
    for name, component in [("root", new.get("root", {})), *new.get("components", {}).items()]:
        where = "pipeline_spec.root" if name == "root" else f"pipeline_spec.components[{name!r}]"
        if not isinstance(component, dict):
            continue
        _upgrade_definitions(component, where)
        for task in component.get("dag", {}).get("tasks", {}).values():
            if isinstance(task, dict):
                _upgrade_task(task)
    new["schemaVersion"] = "2.1.0"
    return new


def is_v1_component(command: list[str]) -> bool:
    """Whether a task's command (command + args) runs kfp 1.8's Python executor."""
    return any(V1_EXECUTOR in part for part in command)


def v1_parameters(parameter_values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Executor-input ``parameterValues`` as kfp 1.8's executor reads them,
    ``inputs.parameters[NAME]`` a Value (``{"intValue": 3}``): a 2.0.0 spec has only INT,
    DOUBLE and STRING inputs, which arrive as int, float and str."""
    parameters: dict[str, dict[str, Any]] = {}
    for name, value in parameter_values.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            text = value if isinstance(value, str) else json.dumps(value)
            parameters[name] = {"stringValue": text}
        elif isinstance(value, int):
            parameters[name] = {"intValue": value}
        else:
            parameters[name] = {"doubleValue": value}
    return parameters


def executor_output(written: Mapping[str, Any]) -> dict[str, Any]:
    """An executor output kfp 1.8's executor wrote (``parameters``: Values, kfp
    ``v2/components/executor.py`` ``_write_output_parameter_value``: a str as ``stringValue``,
    an int ``intValue``, a float ``doubleValue``, anything else JSON in ``stringValue``) with
    its parameters also as ``parameterValues``, the field kfp.local (kfp 2) reads. The
    ``parameters`` stay: Google's notebook reads the file back from the pipeline root
    (``json.loads(output["parameters"]["Output"]["stringValue"])``,
    get_started_with_hpt_pipeline_components.ipynb)."""
    new = dict(written)
    values = dict(new.get("parameterValues") or {})
    for name, value in (written.get("parameters") or {}).items():
        values.setdefault(name, value_of(value, f"executor output parameters[{name!r}]"))
    new["parameterValues"] = values
    return new
