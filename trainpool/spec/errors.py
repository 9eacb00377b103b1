"""The one error shape for bad input: a list of problems, each naming a field."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input: ``field`` is its path, ``message`` says value and fix."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class SpecError(ValueError):
    """Bad input; ``str()`` is one problem per line, each ``field: value ...; accepted: ...``."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))
