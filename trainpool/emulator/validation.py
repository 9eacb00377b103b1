"""The emulator's checks of a request: the planner's own rules, answered as INVALID_ARGUMENT."""

from __future__ import annotations

import os
import re
from typing import Any

from trainpool.emulator.rpc import invalid

PARENT = re.compile(r"^projects/[^/]+/locations/[^/]+$")
ALLOW_UNKNOWN_ENV = "TRAINPOOL_EMULATOR_ALLOW_UNKNOWN_MACHINE_TYPES"
"""Set to 1 to accept machine types the catalog does not know (refused by default)."""


def check_parent(parent: str) -> None:
    if not PARENT.match(parent):
        raise invalid(
            f"parent: {parent!r} is not a location; accepted: projects/PROJECT/locations/LOCATION"
        )


def check_name(name: str, kind: str) -> None:
    if not re.match(rf"^projects/[^/]+/locations/[^/]+/{kind}/[^/]+$", name):
        raise invalid(
            f"name: {name!r} is not a {kind} resource name; "
            f"accepted: projects/PROJECT/locations/LOCATION/{kind}/ID"
        )


def check_job_spec(spec: dict[str, Any], field: str = "custom_job.job_spec") -> None:
    """``trainpool.plan.validate_custom_job_spec``: one rule, one place."""
    from trainpool.plan import PlanError, validate_custom_job_spec

    try:
        validate_custom_job_spec(
            spec, allow_unknown_machine_types=os.environ.get(ALLOW_UNKNOWN_ENV) == "1"
        )
    except PlanError as err:
        raise invalid(f"{field}: {err}") from err


def check_study(
    study_spec: dict[str, Any], max_trials: int, parallel: int, max_failed: int
) -> None:
    """``trainpool.plan.validate_study``: one rule, one place."""
    from trainpool.plan import PlanError
    from trainpool.plan.study import validate_study

    try:
        validate_study(
            study_spec,
            max_trial_count=max_trials,
            parallel_trial_count=parallel,
            max_failed_trial_count=max_failed,
        )
    except PlanError as err:
        raise invalid(f"hyperparameter_tuning_job: {err}") from err
