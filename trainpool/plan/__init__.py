"""Validation rules, Reduction Server sizing, cost and all-reduce traffic: pure functions."""

from typing import Any

from trainpool.plan.errors import PlanError, Problem
from trainpool.plan.planner import Plan, plan_cluster, size_reduction_server
from trainpool.plan.regions import reducer_image
from trainpool.plan.validate import validate_custom_job_spec

__all__ = [
    "Plan",
    "PlanError",
    "Problem",
    "plan_cluster",
    "reducer_image",
    "size_reduction_server",
    "validate_custom_job_spec",
    "validate_study",
]


def __getattr__(name: str) -> Any:
    """``validate_study`` lives in ``trainpool.plan.study_rules`` (imported on first use)."""
    if name == "validate_study":
        from trainpool.plan.study_rules import validate_study

        return validate_study
    raise AttributeError(name)
