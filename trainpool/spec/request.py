"""The cluster request users write (YAML, JSON or a dict), as typed pydantic models.

Every model forbids unknown keys, so a typo is an error that names the key and
the keys that would be accepted. Whole-number floats (``4.0``, from a KFP Struct)
are accepted as ints; ``4.5`` is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError

from trainpool.errors import InputError, brief
from trainpool.spec.errors import Problem, SpecError
from trainpool.spec.keys import coerce_ints
from trainpool.spec.safe_load import load_yaml, read_text

Int = Annotated[int, Strict()]
Bool = Annotated[bool, Strict()]
"""true or false only: ``"yes"`` or ``1`` is refused, not read as true."""
Env = dict[str, str]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PythonPackage(_Model):
    """Run a Python module from packages on a prebuilt executor image, instead of a container."""

    executor_image_uri: str
    package_uris: list[str]
    python_module: str


class _Machine(_Model):
    replica_count: Int | None = None
    machine_type: str | None = None
    accelerator_type: str | None = None
    accelerator_count: Int | None = None
    tpu_topology: str | None = Field(default=None, description='a TPU slice shape such as "2x2"')
    boot_disk_type: str | None = None
    boot_disk_size_gb: Int | None = None


class Pool(_Machine):
    """A pool that runs the training code: primary, workers, parameter servers, evaluators."""

    image_uri: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: Env | None = None
    python_package: PythonPackage | None = None


class ReducerPool(_Machine):
    """The Reduction Server pool: Google's reducer image; ``replica_count`` left out = size it.

    ``machine_type`` defaults to n1-highcpu-16; ``auto`` picks the cheapest per Gbps.
    """


Strategy = Literal["STANDARD", "SPOT", "FLEX_START"]


class ClusterRequest(_Model):
    """A whole training cluster: pools in their roles plus the job-level fields."""

    image_uri: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: Env | None = None
    primary: Pool | None = None
    workers: Pool | None = None
    parameter_servers: Pool | None = None
    reduction_server: ReducerPool | None = None
    evaluators: Pool | None = None
    base_output_directory: str | None = None
    service_account: str | None = None
    network: str | None = None
    reserved_ip_ranges: list[str] | None = None
    enable_web_access: Bool | None = None
    restart_job_on_worker_restart: Bool | None = None
    timeout: str | None = Field(default=None, description='a duration such as "3600s"')
    scheduling_strategy: Strategy | None = None
    max_wait_duration: str | None = None
    labels: dict[str, str] | None = None
    encryption_key: str | None = None
    tensorboard: str | None = None
    persistent_resource_id: str | None = None
    allow_unknown_machine_types: Bool | None = Field(
        default=None,
        description="accept machine types the catalog does not know (with a warning)",
    )


def _accepted_keys(loc: tuple[Any, ...]) -> list[str]:
    """The field names of the model that holds the key at ``loc``."""
    model: Any = ClusterRequest
    for part in loc[:-1]:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return []
        annotation = field.annotation
        model = next(
            (
                arg
                for arg in getattr(annotation, "__args__", (annotation,))
                if isinstance(arg, type) and issubclass(arg, BaseModel)
            ),
            None,
        )
        if model is None:
            return []
    return sorted(model.model_fields)


def _field_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        name = brief(str(part), 60, quoted=False)
        path += f"[{part}]" if isinstance(part, int) else (f".{name}" if path else name)
    return path or "request"


def problems_from(err: ValidationError) -> list[Problem]:
    """Readable problems from pydantic's errors: field, value, what is accepted."""
    problems = []
    for item in err.errors():
        loc = tuple(part for part in item["loc"] if not str(part).startswith("function-"))
        field = _field_path(loc)
        value = item.get("input")
        kind = item["type"]
        if kind == "extra_forbidden":
            message = f"unknown key {brief(loc[-1])}; accepted: {', '.join(_accepted_keys(loc))}"
        elif kind == "literal_error":
            expected = item.get("ctx", {}).get("expected", "")
            message = f"{brief(value)} is not accepted; accepted: {expected}"
        elif kind == "missing":
            message = "missing; accepted: a value"
        else:
            message = f"{brief(value)} is not accepted; {item['msg'][0].lower()}{item['msg'][1:]}"
        problems.append(Problem(field, message))
    return problems


def parse_text(text: str | bytes) -> Any:
    """YAML or JSON text (JSON is YAML) → Python data, read by :mod:`trainpool.spec.safe_load`
    (bounded size, depth and aliases; UTF-8); a bad document is a SpecError."""
    try:
        return load_yaml(text, "request")
    except InputError as err:
        raise SpecError(err.problems) from None


def load_request(src: str | Path | dict[str, Any] | ClusterRequest) -> ClusterRequest:
    """A ClusterRequest from YAML/JSON text, a file path, or a dict; bad input is a SpecError."""
    if isinstance(src, ClusterRequest):
        return src
    if isinstance(src, Path) or (
        isinstance(src, str) and "\n" not in src and src.endswith((".yaml", ".yml", ".json"))
    ):
        path = Path(src)
        if not path.is_file():
            raise SpecError(
                [
                    Problem(
                        "request",
                        f"{str(path)!r} is not a file; accepted: a "
                        "path to a YAML or JSON cluster request",
                    )
                ]
            )
        try:
            data: Any = parse_text(read_text(path, "request"))
        except InputError as err:
            raise SpecError(err.problems) from None
    elif isinstance(src, str):
        data = parse_text(src)
    else:
        data = src
    if not isinstance(data, dict):
        raise SpecError(
            [
                Problem(
                    "request",
                    f"{brief(json.dumps(data, default=str), quoted=False)} is not a mapping; "
                    "accepted: a mapping with at least 'primary'",
                )
            ]
        )
    try:
        return ClusterRequest.model_validate(coerce_ints(data))
    except ValidationError as err:
        raise SpecError(problems_from(err)) from None
