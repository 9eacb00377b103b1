"""Trial parameter choice: the exact grid, random and TPE, scale types, conditional parameters."""

from __future__ import annotations

import math
from typing import Any

import pytest

from trainpool.emulator.sweeps.suggestions import Search, grid
from trainpool.emulator.sweeps.trial_rules import measurement
from trainpool.runtime.hypertune import MetricRecord

OPTIMIZER: dict[str, Any] = {
    "parameterId": "optimizer",
    "categoricalValueSpec": {"values": ["sgd", "adam"]},
    "conditionalParameterSpecs": [
        {
            "parentCategoricalValues": {"values": ["sgd"]},
            "parameterSpec": {"parameterId": "momentum", "discreteValueSpec": {"values": [0, 0.9]}},
        },
        {
            "parentCategoricalValues": {"values": ["adam"]},
            "parameterSpec": {
                "parameterId": "beta",
                "doubleValueSpec": {"minValue": 0.8, "maxValue": 0.999},
                "scaleType": "UNIT_REVERSE_LOG_SCALE",
            },
        },
    ],
}


def study(parameters: list[dict[str, Any]], algorithm: str) -> dict[str, Any]:
    return {
        "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
        "parameters": parameters,
        "algorithm": algorithm,
    }


def test_grid_is_exact_and_expands_conditional_parameters() -> None:
    layers: dict[str, Any] = {
        "parameterId": "layers",
        "integerValueSpec": {"minValue": "1", "maxValue": "2"},
    }
    sgd_only = dict(OPTIMIZER, conditionalParameterSpecs=OPTIMIZER["conditionalParameterSpecs"][:1])
    assert grid([layers, sgd_only]) == [
        {"layers": 1, "optimizer": "sgd", "momentum": 0.0},
        {"layers": 1, "optimizer": "sgd", "momentum": 0.9},
        {"layers": 1, "optimizer": "adam"},
        {"layers": 2, "optimizer": "sgd", "momentum": 0.0},
        {"layers": 2, "optimizer": "sgd", "momentum": 0.9},
        {"layers": 2, "optimizer": "adam"},
    ]
    search = Search(study([layers, sgd_only], "GRID_SEARCH"))
    asked = [search.ask() for _ in range(7)]
    assert [a[1] if a else None for a in asked] == [*grid([layers, sgd_only]), None]


@pytest.mark.parametrize("algorithm", ["RANDOM_SEARCH", "ALGORITHM_UNSPECIFIED"])
def test_sampled_values_respect_ranges_scales_and_conditions(algorithm: str) -> None:
    parameters: list[dict[str, Any]] = [
        {
            "parameterId": "lr",
            "doubleValueSpec": {"minValue": 1e-5, "maxValue": 1e-1},
            "scaleType": "UNIT_LOG_SCALE",
        },
        {"parameterId": "units", "integerValueSpec": {"minValue": "8", "maxValue": "64"}},
        OPTIMIZER,
    ]
    search = Search(study(parameters, algorithm), seed=3)
    small_lr = 0
    for _ in range(30):
        asked = search.ask()
        assert asked is not None
        number, params = asked
        assert 1e-5 <= params["lr"] <= 1e-1
        small_lr += params["lr"] < 1e-3
        assert isinstance(params["units"], int) and 8 <= params["units"] <= 64
        if params["optimizer"] == "sgd":
            assert set(params) == {"lr", "units", "optimizer", "momentum"}
            assert params["momentum"] in (0.0, 0.9)
        else:
            assert set(params) == {"lr", "units", "optimizer", "beta"}
            assert 0.8 <= params["beta"] <= 0.999
        search.tell(number, math.log10(params["lr"]) ** 2)
    if algorithm == "RANDOM_SEARCH":
        assert small_lr >= 10, "log scale: about half the draws fall in the lower 2 of 4 decades"


def test_measurement_last_or_best() -> None:
    def rec(step: int, loss: float) -> MetricRecord:
        return MetricRecord(0.0, "1", step, "", {"loss": loss, "other": 7.0})

    records = [rec(1, 0.5), rec(2, 0.2), rec(3, 0.4)]
    assert measurement(records, "loss", "MINIMIZE", "LAST_MEASUREMENT") == (0.4, 3)
    assert measurement(records, "loss", "MINIMIZE", "BEST_MEASUREMENT") == (0.2, 2)
    assert measurement(records, "loss", "MAXIMIZE", "BEST_MEASUREMENT") == (0.5, 1)
    assert measurement(records, "accuracy", "MAXIMIZE", "LAST_MEASUREMENT") is None
