"""Choosing the parameters of each trial: the exact grid, random search, or optuna's TPE.

Vertex's default algorithm is Vizier (Bayesian optimisation); locally the default
is optuna's TPE sampler, and the job log says so. Conditional parameters are
suggested only when their parent's value matches. Values keep Vertex's types:
DOUBLE and DISCRETE are floats, INTEGER ints, CATEGORICAL strings.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import optuna

from trainpool.spec.study import bound

Params = dict[str, Any]

ALGORITHM_NOTES = {
    "GRID_SEARCH": "GRID_SEARCH: every point of the grid, in order",
    "RANDOM_SEARCH": "RANDOM_SEARCH: optuna's RandomSampler",
    "ALGORITHM_UNSPECIFIED": (
        "ALGORITHM_UNSPECIFIED: Vertex uses Vizier (Bayesian optimisation); "
        "locally optuna's TPE sampler stands in for it"
    ),
}


def _values(spec: dict[str, Any]) -> Sequence[Any]:
    """The finite values of an INTEGER (a ``range``, never a list: its bounds may be far
    apart), DISCRETE or CATEGORICAL parameter."""
    if "integerValueSpec" in spec:
        bounds = spec["integerValueSpec"]
        return range(int(bound(bounds, "minValue")), int(bound(bounds, "maxValue")) + 1)
    if "discreteValueSpec" in spec:
        return [float(v) for v in spec["discreteValueSpec"]["values"]]
    return [str(v) for v in spec["categoricalValueSpec"]["values"]]


def _children(spec: dict[str, Any], value: Any) -> list[dict[str, Any]]:
    """The conditional parameter specs that apply when ``spec``'s parameter is ``value``."""
    chosen = []
    for cond in spec.get("conditionalParameterSpecs", []):
        for key in ("parentIntValues", "parentDiscreteValues", "parentCategoricalValues"):
            allowed = cond.get(key, {}).get("values")
            if allowed is None:
                continue
            if key == "parentCategoricalValues":
                hit = value in [str(v) for v in allowed]
            else:
                hit = any(math.isclose(float(value), float(v)) for v in allowed)
            if hit:
                chosen.append(cond["parameterSpec"])
    return chosen


def grid(parameters: list[dict[str, Any]]) -> list[Params]:
    """Every point of the grid, first parameter slowest, conditional parameters expanded."""
    return list(grid_points(parameters))


def grid_points(parameters: list[dict[str, Any]]) -> Iterator[Params]:
    """:func:`grid`'s points one at a time: a sweep takes at most ``maxTrialCount`` of them,
    so a grid of 10^15 points costs no more than one of ten."""
    if not parameters:
        yield {}
        return
    for choice in _expand(parameters[0]):
        for rest in grid_points(parameters[1:]):
            yield {**choice, **rest}


def _expand(spec: dict[str, Any]) -> Iterator[Params]:
    for value in _values(spec):
        base = {spec["parameterId"]: value}
        for combo in grid_points(_children(spec, value)):
            yield {**base, **combo}


def _suggest(trial: optuna.Trial, spec: dict[str, Any], params: Params) -> None:
    pid = spec["parameterId"]
    scale = spec.get("scaleType", "SCALE_TYPE_UNSPECIFIED")
    if "doubleValueSpec" in spec:
        low = float(bound(spec["doubleValueSpec"], "minValue"))
        high = float(bound(spec["doubleValueSpec"], "maxValue"))
        if scale == "UNIT_REVERSE_LOG_SCALE":
            value = low + high - trial.suggest_float(f"{pid}/reverse", low, high, log=True)
        else:
            value = trial.suggest_float(pid, low, high, log=scale == "UNIT_LOG_SCALE")
    elif "integerValueSpec" in spec:
        bounds = spec["integerValueSpec"]
        low, high = int(bound(bounds, "minValue")), int(bound(bounds, "maxValue"))
        value = trial.suggest_int(pid, low, high, log=scale == "UNIT_LOG_SCALE")
    else:
        value = trial.suggest_categorical(pid, _values(spec))
    params[pid] = value
    for child in _children(spec, value):
        _suggest(trial, child, params)


class Search:
    """Asks for each trial's parameters and is told each trial's measurement."""

    def __init__(self, study_spec: dict[str, Any], seed: int = 0) -> None:
        self.parameters = study_spec["parameters"]
        self.algorithm = str(study_spec.get("algorithm", "ALGORITHM_UNSPECIFIED"))
        self.goal = study_spec["metrics"][0].get("goal", "MAXIMIZE")
        self._grid = grid_points(self.parameters) if self.algorithm == "GRID_SEARCH" else None
        sampler: optuna.samplers.BaseSampler = (
            optuna.samplers.RandomSampler(seed=seed)
            if self.algorithm == "RANDOM_SEARCH"
            else optuna.samplers.TPESampler(seed=seed)
        )
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        direction: Literal["maximize", "minimize"] = (
            "maximize" if self.goal == "MAXIMIZE" else "minimize"
        )
        self._study = optuna.create_study(sampler=sampler, direction=direction)
        self._asked: dict[int, optuna.Trial] = {}
        self._count = 0

    @property
    def note(self) -> str:
        return ALGORITHM_NOTES.get(self.algorithm, self.algorithm)

    def ask(self) -> tuple[int, Params] | None:
        """``(number, params)`` of the next trial; None when the grid is exhausted."""
        number = self._count
        if self._grid is not None:
            point = next(self._grid, None)
            if point is None:
                return None
            self._count += 1
            return number, point
        trial = self._study.ask()
        params: Params = {}
        for spec in self.parameters:
            _suggest(trial, spec, params)
        self._asked[number] = trial
        self._count += 1
        return number, params

    def tell(self, number: int, value: float | None) -> None:
        """The measurement of trial ``number`` (None: the trial failed)."""
        trial = self._asked.pop(number, None)
        if trial is None:
            return
        if value is None:
            self._study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            self._study.tell(trial, value)

    def replay(self, params: Params, value: float | None, finished: bool = True) -> None:
        """A trial that already has its parameters (a Vizier study's stored trial): the
        sampler asks it again with those values fixed (``enqueue_trial``) and is told its
        measurement (``value`` None and ``finished``: it failed; not ``finished``: it is
        still running, so nothing is told). The grid skips it instead: see
        :meth:`skip_grid`."""
        fixed: Params = {}
        for spec in _walk(self.parameters):
            pid = spec["parameterId"]
            if pid not in params:
                continue
            scale = spec.get("scaleType", "SCALE_TYPE_UNSPECIFIED")
            if "doubleValueSpec" in spec and scale == "UNIT_REVERSE_LOG_SCALE":
                low = float(bound(spec["doubleValueSpec"], "minValue"))
                high = float(bound(spec["doubleValueSpec"], "maxValue"))
                fixed[f"{pid}/reverse"] = low + high - float(params[pid])
            else:
                fixed[pid] = params[pid]
        self._study.enqueue_trial(fixed, skip_if_exists=False)
        asked = self.ask()
        if asked is not None and finished:
            self.tell(asked[0], value)

    def skip_grid(self, taken: list[Params]) -> None:
        """The grid's points that ``taken`` (trials already in the study) hold are not
        suggested again."""
        if self._grid is None:
            return
        seen = [_comparable(p) for p in taken]
        self._grid = (point for point in self._grid if _comparable(point) not in seen)


def _walk(parameters: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every parameter spec, conditional ones included."""
    for spec in parameters:
        yield spec
        for cond in spec.get("conditionalParameterSpecs", []):
            yield from _walk([cond["parameterSpec"]])


def _comparable(params: Params) -> dict[str, Any]:
    """Numbers as floats (a stored INTEGER value reads back as 3.0), text as text."""
    return {k: float(v) if isinstance(v, (int, float)) else str(v) for k, v in params.items()}
