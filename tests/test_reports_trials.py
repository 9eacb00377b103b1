"""The trials report from a tuning job's REST JSON: what it reads, what it draws, its size."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from trainpool.reports.charts import best_so_far
from trainpool.reports.page import trials_page
from trainpool.reports.sweep_data import Parameter, Stopped, from_job

SIZE_BOUND = 1_000_000  # bytes for 100 trials; plotly.js alone, embedded, is about 4.7 MB

LR = {"parameterId": "lr", "doubleValueSpec": {"minValue": 1e-4, "maxValue": 0.1}}
UNITS = {"parameterId": "units", "integerValueSpec": {"minValue": "8", "maxValue": "512"}}
ACT = {"parameterId": "act", "categoricalValueSpec": {"values": ["relu", "tanh", "gelu"]}}


def trial(number: int, params: dict[str, Any], final: float | None, steps: int = 0) -> dict:
    parameters = [{"parameterId": k, "value": v} for k, v in params.items()]
    if final is None:
        return {
            "id": str(number),
            "state": "INFEASIBLE",
            "parameters": parameters,
            "infeasibleReason": "exit 3: <loss> is NaN",
        }
    curve = [
        {"stepCount": str(s), "metrics": [{"metricId": "acc", "value": final * (1 - 0.5**s)}]}
        for s in range(steps, 0, -1)  # out of order on purpose: the report sorts by step
    ]
    return {
        "id": str(number),
        "state": "SUCCEEDED",
        "parameters": parameters,
        "finalMeasurement": {"metrics": [{"metricId": "acc", "value": final}]},
        "measurements": curve,
    }


def job(trials: list[dict], parameters: list[dict], goal: Any = "MAXIMIZE") -> dict[str, Any]:
    study = {"metrics": [{"metricId": "acc", "goal": goal}], "parameters": parameters}
    return {
        "displayName": "sweep",
        "state": "JOB_STATE_SUCCEEDED",
        "studySpec": study,
        "trials": trials,
    }


def test_parameters_are_read_on_their_own_scale() -> None:
    log_lr = {**LR, "scaleType": "UNIT_LOG_SCALE"}
    numbered = {**UNITS, "scaleType": 2}  # a proto number, as Message.to_dict gives it
    sweep = from_job(job([], [log_lr, numbered, ACT, LR]))
    assert sweep.parameters == (
        Parameter("lr", "log"),
        Parameter("units", "log"),
        Parameter("act", "categorical", ("relu", "tanh", "gelu")),
        Parameter("lr", "linear"),
    )


def test_steps_are_read_by_step_and_the_best_follows_the_goal() -> None:
    trials = [trial(1, {"lr": 0.1}, 0.5, steps=3), trial(2, {"lr": 0.01}, 0.9), trial(3, {}, None)]
    sweep = from_job(job(trials, [LR]))
    assert sweep.steps == {"1": [(1, 0.25), (2, 0.375), (3, 0.4375)], "2": [], "3": []}
    assert (sweep.goal, sweep.best_id) == ("MAXIMIZE", "2")
    assert from_job(job(trials, [LR], goal=2)).best_id == "1"  # 2: MINIMIZE
    assert [t["id"] for t in sweep.measured()] == ["1", "2"]


def test_best_so_far_follows_the_goal() -> None:
    assert best_so_far([3.0, 1.0, 2.0, 0.5], "MINIMIZE") == [3.0, 1.0, 1.0, 0.5]
    assert best_so_far([3.0, 1.0, 4.0, 0.5], "MAXIMIZE") == [3.0, 3.0, 4.0, 4.0]


def test_one_parameter_no_steps_page_has_no_parallel_view_and_says_so() -> None:
    trials = [trial(1, {"lr": 0.1}, 0.5), trial(2, {"lr": 0.01}, 0.9), trial(3, {"lr": 1}, None)]
    html = trials_page(from_job(job(trials, [{**LR, "scaleType": "UNIT_LOG_SCALE"}])))
    assert html.count("<svg") == 2  # metric vs lr, history
    assert "Parallel coordinates" not in html
    assert "No trial has per-step measurements." in html
    assert "lr (log scale)" in html
    assert html.count("<tr") == 4
    assert "exit 3: &lt;loss&gt; is NaN" in html and "<loss>" not in html
    assert '<tr class="best"><td data-sort="2" class="num">2</td>' in html
    assert "best: trial 2, acc = 0.9 with lr=0.01." in html


def test_no_measured_trial_gives_a_page_without_metric_charts() -> None:
    html = trials_page(from_job(job([trial(1, {"lr": 0.1}, None)], [LR])))
    assert "<svg" not in html
    assert "no trial reported acc." in html


def sweep_of_100(steps: int) -> dict[str, Any]:
    trials = []
    for n in range(1, 101):
        lr, units, act = 10 ** (-4 + 3 * ((n * 37) % 100) / 100), 8 + (n * 53) % 500, n % 3
        params = {"lr": lr, "units": units, "act": ["relu", "tanh", "gelu"][act]}
        final = None if n % 9 == 4 else 1.0 - abs(math.log10(lr) + 2.5) / 5 + units / 5000
        trials.append(trial(n, params, final, steps))
    return job(trials, [{**LR, "scaleType": "UNIT_LOG_SCALE"}, UNITS, ACT])


@pytest.mark.parametrize("steps", [25, 100])  # 25: curves still marked per point; 100: the most
def test_a_report_of_100_trials_stays_under_the_size_bound(steps: int) -> None:
    # hypertune keeps each trial's last 100 reports, so 100 steps is the most a trial has
    html = trials_page(from_job(sweep_of_100(steps)))
    size = len(html.encode())
    print(f"100 trials x {steps} steps: {size} bytes")
    assert size < SIZE_BOUND
    assert html.count("<svg") == 4
    assert len(re.findall(r"<tr[ >]", html)) == 101
    assert re.findall(r'(?:src|href)="(?!#|data:)', html) == []  # nothing outside the file


STOP = "Stopped early by the study's medianAutomatedStoppingSpec at step 3: its best ..."


def test_stopped_trials_are_marked_in_the_table_and_on_the_curves_with_their_step() -> None:
    trials = [trial(1, {"lr": 0.1}, 0.9, steps=8), trial(2, {"lr": 0.01}, 0.2, steps=5)]
    trials.append(trial(3, {"lr": 0.05}, 0.3, steps=6))
    stopped = {"2": STOP, "3": "stopped by a rule whose words name no step"}
    sweep = from_job(job(trials, [LR]), stopped)
    assert sweep.stopped == {"2": Stopped(3, STOP), "3": Stopped(6, stopped["3"])}  # else: last
    html = trials_page(sweep)
    assert "3 trials (3 succeeded; 2 stopped early)" in html
    rows = re.findall(r"<tr[^>]*>.*?</tr>", html.split('id="trials"')[1], re.S)
    assert "<th>stopped at step</th>" in html
    assert rows[1].startswith('<tr class="best">')
    assert '<tr class="stopped"><td data-sort="2" class="num">2</td>' in rows[2]
    assert "<td>SUCCEEDED, stopped early</td>" in rows[2]
    assert '<td data-sort="3" class="num">3</td>' in rows[2]  # the step it stopped at
    assert "at step 3: its best ..." in rows[2]
    assert "trial 2 (stopped at step 3)" in html and "trial 3 (stopped at step 6)" in html
    assert "stopped early (at the X)" in html
    assert "Dashed, with an X: stopped early" in html
    plain = trials_page(from_job(job(trials, [LR])))
    assert "stopped" not in plain.replace("tr.stopped", "")
