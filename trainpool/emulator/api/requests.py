"""Checks of a request before anything is created: names, parents, labels, display names,
``gs://`` URIs, and the planner's own rules for job specs and studies (one rule, one place),
each an INVALID_ARGUMENT naming the field, the value and what is accepted.

Parents are ``projects/PROJECT/locations/LOCATION`` ("Format:
``projects/{project}/locations/{location}``", ``CreateCustomJobRequest.parent``): PROJECT a
project ID or number (IDs are 6-30 characters on Google Cloud; shorter ones such as
``demo`` are accepted here, as tests and examples use them), LOCATION a Vertex AI region
of the catalog (:func:`trainpool.plan.regions.location_problem`, nearest first).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from trainpool.emulator import field_coverage
from trainpool.emulator.api.rpc import not_found
from trainpool.emulator.records.kinds import Kind
from trainpool.emulator.records.resources import Records
from trainpool.errors import InputError, Problem, brief
from trainpool.plan import PlanError, validate_custom_job_spec
from trainpool.plan.label_rules import label_problems
from trainpool.plan.regions import location_problem
from trainpool.plan.study_rules import validate_study
from trainpool.plan.text_rules import display_name_problem, gcs_uri_problem, nul_paths

PROJECT = r"(?:[a-z0-9][a-z0-9.-]{0,61}[a-z0-9]:)?[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
PARENT = re.compile(rf"projects/({PROJECT})/locations/([^/]{{1,63}})")
MAX_NAME = 1024
ALLOW_UNKNOWN_ENV = "TRAINPOOL_EMULATOR_ALLOW_UNKNOWN_MACHINE_TYPES"
"""Set to 1 to accept machine types the catalog does not know (refused by default)."""
_PARENT_ACCEPTED = (
    "projects/PROJECT/locations/LOCATION, PROJECT a project ID (lowercase letters, digits "
    "and '-') or number"
)


def check_parent(parent: str, field: str = "parent") -> None:
    """INVALID_ARGUMENT unless ``parent`` is ``projects/PROJECT/locations/LOCATION`` with a
    Vertex AI region as LOCATION."""
    match = PARENT.fullmatch(parent) if len(parent) <= MAX_NAME else None
    if match is None:
        raise InputError.of(
            field, f"{brief(parent)} is not a location; accepted: {_PARENT_ACCEPTED}"
        )
    problem = location_problem(match.group(2))
    if problem is not None:
        raise InputError.of(f"{field} location", problem)


def check_name(name: str, collection: str) -> None:
    """INVALID_ARGUMENT unless ``name`` is ``PARENT/COLLECTION/ID`` (PARENT as
    :func:`check_parent` reads it)."""
    parent, _, rest = name.rpartition(f"/{collection}/")
    if not parent or not re.fullmatch(r"[^/\0]{1,128}", rest) or len(name) > MAX_NAME:
        raise InputError.of(
            "name",
            f"{brief(name)} is not a {collection} resource name; "
            f"accepted: projects/PROJECT/locations/LOCATION/{collection}/ID",
        )
    check_parent(parent, "name")


def check_labels(labels: Any, field: str) -> None:
    """Vertex's label rules (:mod:`trainpool.plan.label_rules`)."""
    problems = label_problems(dict(labels) if labels else {}, field)
    if problems:
        raise InputError(problems)


def check_gcs_uri(uri: str, field: str) -> None:
    """Cloud Storage's naming rules for a ``gs://`` URI (no ``..`` or empty segment)."""
    problem = gcs_uri_problem(uri, field)
    if problem is not None:
        name, _, message = problem.partition(": ")
        raise InputError.of(name, message)


def check_no_nul(data: Any, field: str) -> None:
    """No string (or key) in ``data`` holds a NUL character."""
    found = list(nul_paths(data))
    if found:
        raise InputError(
            [
                Problem(f"{field}.{path}", "holds a NUL character; accepted: text without NUL")
                for path in found[:5]
            ]
        )


def existing(records: Records, kind: Kind, name: str) -> Any:
    """The stored resource ``name`` of ``kind``: INVALID_ARGUMENT for a name that is not one
    of that kind's, NOT_FOUND when there is none."""
    check_name(name, kind.collection)
    found = records.get(kind, name)
    if found is None:
        raise not_found(f"{kind.label} {name} not found.")
    return found


def list_page(records: Records, kind: Kind, request: Any) -> tuple[list[Any], str]:
    """The page a List request (``parent``, ``filter``, ``page_size``, ``page_token``, and
    ``order_by`` for a kind that orders by its times) asks for, and the next page token."""
    check_parent(request.parent)
    return records.page(
        kind,
        request.parent,
        filter=request.filter,
        page_size=request.page_size,
        page_token=request.page_token,
        order_by=getattr(request, "order_by", "") if kind.times else "",
    )


def check_display_name(value: str, field: str, *, required: bool = True) -> None:
    """1-128 characters, no NUL (:func:`trainpool.plan.text_rules.display_name_problem`);
    an optional one may be empty."""
    if not value and not required:
        return
    problem = display_name_problem(value)
    if problem is not None:
        raise InputError.of(field, problem)


def check_job_spec(spec: dict[str, Any], field: str = "custom_job.job_spec") -> list[str]:
    """``trainpool.plan.validate_custom_job_spec`` as Vertex judges (one rule, one place):
    its warnings, for the job's log."""
    try:
        return validate_custom_job_spec(
            spec,
            allow_unknown_machine_types=os.environ.get(ALLOW_UNKNOWN_ENV) == "1",
            as_vertex=True,
        )
    except PlanError as err:
        raise _under(field, err) from err


def _under(field: str, err: InputError) -> InputError:
    """``err``'s problems, each named under the request's ``field``."""
    return InputError(
        [Problem(f"{field}.{p.field}" if p.field else field, p.message) for p in err.problems]
    )


def check_study(
    study_spec: dict[str, Any], max_trials: int, parallel: int, max_failed: int
) -> None:
    """``trainpool.plan.validate_study``: one rule, one place."""
    try:
        validate_study(
            study_spec,
            max_trial_count=max_trials,
            parallel_trial_count=parallel,
            max_failed_trial_count=max_failed,
        )
    except PlanError as err:
        raise _under("hyperparameter_tuning_job", err) from err


def check_fields(resource: str, message: Any) -> dict[str, Any]:
    """INVALID_ARGUMENT for a field the emulator refuses (:mod:`.field_coverage`); the
    request's fields, for :func:`note_fields` once the resource exists."""
    fields = field_coverage.request_fields(resource, message)
    problems = field_coverage.refusals(resource, fields)
    if problems:
        raise InputError(problems)
    return fields


def note_fields(resource: str, fields: dict[str, Any], note: Callable[[str], None]) -> None:
    """One line in the job's log per field it set that the emulator does not apply."""
    for line in field_coverage.notes(resource, fields):
        note(line)
