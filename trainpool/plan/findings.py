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

    def error(self, where: str, message: str) -> None:
        self.problems.append(Problem(where, message))

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
