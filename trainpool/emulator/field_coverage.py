"""Every field a client sets on what it creates, and what the emulator does with it: none ignored.

The fields are generated from the protos: the aiplatform v1 types of the four resources a
client creates and the emulator runs (``CustomJob``, ``HyperparameterTuningJob``,
``TrainingPipeline`` whose custom task's inputs are a ``CustomJobSpec``, ``PipelineJob``),
walked field by field; a field whose documentation (copied from the proto's comments)
starts "Output only." is the service's to set, and a client's value is dropped, as Vertex
drops it. Every other field is one of:

- ``applied``: the emulator does with it what Vertex does (the rule says where);
- ``refused``: a Create that sets it answers INVALID_ARGUMENT naming it and why;
- ``logged``: accepted, and the job's log (a PipelineJob's ``run.log``) says, when it is
  set, that it is not applied and what happens instead.

The rules are the table of :mod:`trainpool.emulator.field_rules`; a rule on a field covers
the fields under it unless a rule of theirs says otherwise. :func:`coverage` lists every
field with its rule (a field of the protos that no rule covers is ``unclassified``:
``tests/test_emulator_field_coverage.py`` fails on one, so a new field of a new aiplatform
release is classified before it can be ignored); :func:`unapplied` is the list of refused
and logged fields the coverage page shows (``docs/emulator-coverage.md``, generated: one row
per :class:`Field`, ``path``, ``action``, ``why``). :func:`refusals` and :func:`notes` apply
it to a request.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import proto
from google.cloud.aiplatform_v1.types import custom_job as cj
from google.protobuf import json_format

from trainpool.emulator.field_rules import LOGGED, REFUSED, RESOURCES, RULES, SPECS, Rule
from trainpool.errors import Problem, brief
from trainpool.spec import normalize_spec, to_snake

OUTPUT, UNCLASSIFIED = "output", "unclassified"


@dataclass(frozen=True)
class Field:
    """One field (``custom_job.job_spec.enable_web_access``: the proto's names, through
    repeated fields and maps as through a single one), what the emulator does with it."""

    path: str
    action: str
    why: str


_ATTRIBUTE = re.compile(r"^ {8}(\w+) \(")


def _output_only(cls: type[proto.Message]) -> frozenset[str]:
    """The fields whose documentation (the proto's comment) starts "Output only."."""
    first: dict[str, str] = {}
    current = None
    for line in (cls.__doc__ or "").splitlines():
        found = _ATTRIBUTE.match(line)
        if found:
            current = found.group(1)
            first[current] = ""
        elif current and line.strip() and not first[current]:
            first[current] = line.strip()
    return frozenset(name for name, text in first.items() if text.startswith("Output only."))


def _walk(cls: type[proto.Message], prefix: str, seen: tuple[type, ...]) -> Iterator[Field]:
    outputs = _output_only(cls)
    descriptor = cls.pb().DESCRIPTOR
    for name, spec in cls.meta.fields.items():
        path = f"{prefix}.{name}"
        if name in outputs:
            yield Field(path, OUTPUT, "output only: Vertex sets it, a client's value is dropped")
            continue
        if path in SPECS[2:]:  # a custom task's inputs: a CustomJobSpec, as JSON
            yield _classified(path, False)
            yield from _walk(cj.CustomJobSpec, path, seen)
            continue
        message = spec.message
        kind = descriptor.fields_by_name[name].message_type
        nested = (
            isinstance(message, type)
            and issubclass(message, proto.Message)
            and not (kind is not None and kind.GetOptions().map_entry)
            and message not in seen
        )
        if nested and any(rule.startswith(path + ".") for rule in RULES):
            if path in RULES:
                yield _classified(path, False)
            yield from _walk(message, path, (*seen, cls))
        elif nested and _rule_for(path) is None:
            yield from _walk(message, path, (*seen, cls))
        else:
            yield _classified(path, True)


def _rule_for(path: str) -> tuple[str, Rule] | None:
    """The rule of ``path``: its own, else its nearest parent's."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        found = RULES.get(".".join(parts[:end]))
        if found is not None:
            return ".".join(parts[:end]), found
    return None


def _classified(path: str, leaf: bool) -> Field:
    found = _rule_for(path)
    if found is None:
        return Field(path, UNCLASSIFIED, "no rule says what the emulator does with it")
    return Field(path, found[1].action, found[1].why)


@functools.cache
def coverage() -> tuple[Field, ...]:
    """Every field of the four resources (see the module), each where its rule sits (a field
    under a rule that says nothing else of it is not repeated) and every output field."""
    fields: list[Field] = []
    for name, cls in RESOURCES.items():
        for found in _walk(cls, name, ()):
            rule = _rule_for(found.path)
            if found.action in (OUTPUT, UNCLASSIFIED) or (rule and rule[0] == found.path):
                fields.append(found)
    return tuple(dict.fromkeys(fields))


def unapplied() -> list[Field]:
    """The fields the emulator does not apply: refused or logged."""
    return [f for f in coverage() if f.action in (REFUSED, LOGGED)]


def request_fields(resource: str, message: Any) -> dict[str, Any]:
    """``message`` (a resource of ``resource``) as a dict of the proto's field names, without
    defaults; a custom task's inputs as a CustomJobSpec's."""
    found: dict[str, Any] = json_format.MessageToDict(
        type(message).pb(message), preserving_proto_field_name=True
    )
    if resource == "training_pipeline" and isinstance(found.get("training_task_inputs"), dict):
        found["training_task_inputs"] = to_snake(normalize_spec(found["training_task_inputs"]))
    return found


def _set(data: Any, parts: list[str]) -> bool:
    """Whether the field at ``parts`` holds a value in ``data`` (any item of a list)."""
    if isinstance(data, list):
        return any(_set(item, parts) for item in data)
    if not parts:
        return data not in (None, "", 0, False, [], {})
    if not isinstance(data, dict) or parts[0] not in data:
        return False
    return _set(data[parts[0]], parts[1:])


def _present(resource: str, data: dict[str, Any], action: str) -> list[Field]:
    return [
        f
        for f in unapplied()
        if f.action == action
        and f.path.startswith(resource + ".")
        and _set(data, f.path.split(".")[1:])
    ]


def refusals(resource: str, data: dict[str, Any]) -> list[Problem]:
    """One problem per refused field set in ``data`` (:func:`request_fields`), and a
    ``tensorboard`` without the ``service_account`` Vertex requires with it."""
    problems = [
        Problem(f.path, f"{_shown(data, f.path)} is set; {f.why}")
        for f in _present(resource, data, REFUSED)
        if not f.why.endswith("plan/study_field_rules.py")  # the study's own rules answer those
    ]
    for spec in SPECS:
        head, _, rest = spec.partition(".")
        inner = data.get(rest) if head == resource else None
        if not isinstance(inner, dict) or inner.get("service_account"):
            continue
        for needs, why in (
            (
                "tensorboard",
                "must be specified when uploading to TensorBoard ({spec}.tensorboard is "
                "{value}: Vertex's answer, kubeflow/pipelines#7123); accepted: a service "
                "account email, or no tensorboard",
            ),
            (
                "experiment",
                "must be specified with an experiment ({spec}.experiment is {value}: "
                "'`service_account` is required with provided `experiment`', the Vertex AI "
                "SDK's CustomJob.run); accepted: a service account email, or no experiment",
            ),
        ):
            if inner.get(needs):
                problems.append(
                    Problem(
                        f"{spec}.service_account",
                        why.format(spec=spec, value=brief(inner[needs], 120)),
                    )
                )
    return problems


def _shown(data: dict[str, Any], path: str) -> str:
    """The value at ``path`` (its first, through lists), briefly, for a message."""
    value: Any = data
    for part in path.split(".")[1:]:
        while isinstance(value, list) and value:
            value = value[0]
        value = value.get(part) if isinstance(value, dict) else None
    return brief(value if isinstance(value, str) else json.dumps(value), 120)


def notes(resource: str, data: dict[str, Any]) -> list[str]:
    """One job log line per logged field set in ``data`` (:func:`request_fields`)."""
    return [
        f"{f.path} is not applied by the emulator: {f.why}"
        for f in _present(resource, data, LOGGED)
        if not f.why.startswith("sweeps/unapplied_study_fields.py")  # the sweep says those itself
    ]
