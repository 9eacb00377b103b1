"""The planner's error: every problem found, each naming its field."""

from __future__ import annotations

from trainpool.spec.errors import Problem, SpecError


class PlanError(SpecError):
    """A request or spec refused; ``.problems`` lists them, ``str()`` is one per line."""


__all__ = ["PlanError", "Problem"]
