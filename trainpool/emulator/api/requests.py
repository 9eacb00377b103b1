"""Checks of a request before anything is created: names, parents, and the planner's own
rules for job specs and studies (one rule, one place), each an INVALID_ARGUMENT naming the
field, the value and what is accepted."""

from __future__ import annotations

import os
import re
from typing import Any

from trainpool.emulator.api.rpc import not_found
from trainpool.emulator.records.resources import Kind, Records
from trainpool.errors import InputError
from trainpool.plan import PlanError, validate_custom_job_spec
from trainpool.plan.study import validate_study

PARENT = re.compile(r"^projects/[^/]+/locations/[^/]+$")
ALLOW_UNKNOWN_ENV = "TRAINPOOL_EMULATOR_ALLOW_UNKNOWN_MACHINE_TYPES"
"""Set to 1 to accept machine types the catalog does not know (refused by default)."""


def check_parent(parent: str) -> None:
    if not PARENT.match(parent):
        raise InputError.of(
            "parent", f"{parent!r} is not a location; accepted: projects/PROJECT/locations/LOCATION"
        )


def check_name(name: str, collection: str) -> None:
    if not re.match(rf"^projects/[^/]+/locations/[^/]+/{collection}/[^/]+$", name):
        raise InputError.of(
            "name",
            f"{name!r} is not a {collection} resource name; "
            f"accepted: projects/PROJECT/locations/LOCATION/{collection}/ID",
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
    """The page a List request (``parent``, ``filter``, ``page_size``, ``page_token``) asks for,
    and the next page token."""
    check_parent(request.parent)
    return records.page(
        kind,
        request.parent,
        filter=request.filter,
        page_size=request.page_size,
        page_token=request.page_token,
    )


def check_display_name(value: str, field: str) -> None:
    if not value:
        raise InputError.of(field, "'' is empty; accepted: a non-empty name")


def check_job_spec(spec: dict[str, Any], field: str = "custom_job.job_spec") -> None:
    """``trainpool.plan.validate_custom_job_spec``: one rule, one place."""
    try:
        validate_custom_job_spec(
            spec, allow_unknown_machine_types=os.environ.get(ALLOW_UNKNOWN_ENV) == "1"
        )
    except PlanError as err:
        raise InputError.of(field, str(err)) from err


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
        raise InputError.of("hyperparameter_tuning_job", str(err)) from err
