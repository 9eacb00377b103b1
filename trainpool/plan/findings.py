"""What a validation pass collects: problems (refuse) and warnings (report)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeGuard

from trainpool.errors import brief
from trainpool.plan.errors import PlanError, Problem


@dataclass
class Findings:
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    as_vertex: bool = False
    """Judge as Vertex's API does (the emulator): trainpool's own advice (:meth:`advise`) is a
    warning there, since Vertex accepts what it advises against."""

    def error(self, where: str, message: str) -> None:
        self.problems.append(Problem(where, message))

    def advise(self, where: str, message: str) -> None:
        """A request Vertex accepts but trainpool's planner refuses (it would not do what it
        is for): an error when planning, a warning when judged as Vertex."""
        if self.as_vertex:
            self.warn(where, f"{message} (Vertex accepts this; trainpool's planner does not)")
        else:
            self.error(where, message)

    def warn(self, where: str, message: str) -> None:
        self.warnings.append(f"{where}: {message}")

    def raise_if_any(self) -> None:
        if self.problems:
            raise PlanError(self.problems)


def is_whole(value: Any) -> TypeGuard[int]:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def show(value: Any) -> str:
    """A value as it reads in an error (a huge one cut short, its length said)."""
    return brief(value)
