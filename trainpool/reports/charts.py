"""The sweep's charts: metric vs each parameter, search history, per-step curves (SVG)."""

from __future__ import annotations

import math
from typing import Any

from matplotlib.axes import Axes
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from trainpool.reports.figure import BEST, FAILED, SHADES, drawing, to_svg
from trainpool.reports.sweep_data import Parameter, Sweep

MARKED_STEPS = 25  # longer per-step curves are drawn without a marker per point (file size)
LEGEND_TRIALS = 12  # more per-step curves than this get a colour bar instead of a legend


def categories(param: Parameter, sweep: Sweep) -> list[str]:
    """The categorical parameter's values in study order, then any others the trials used."""
    seen = [str(t["parameters"][param.id]) for t in sweep.trials if param.id in t["parameters"]]
    return [*param.categories, *sorted(set(seen) - set(param.categories))]


def position(param: Parameter, sweep: Sweep, value: Any) -> float:
    """Where a parameter value goes on its x axis (a category's index for a categorical)."""
    if param.scale == "categorical":
        return float(categories(param, sweep).index(str(value)))
    return float(value)


def _param_axis(ax: Axes, param: Parameter, sweep: Sweep) -> None:
    if param.scale == "categorical":
        names = categories(param, sweep)
        ax.set_xticks(range(len(names)), labels=names)
        ax.set_xlim(-0.5, len(names) - 0.5)
        ax.set_xlabel(param.id)
    elif param.scale == "log":
        ax.set_xscale("log")
        ax.set_xlabel(f"{param.id} (log scale)")
    else:
        ax.set_xlabel(param.id)


def _failed_marks(ax: Axes, xs: list[float]) -> None:
    """Trials without a metric as grey crosses along the bottom edge of the plot."""
    if xs:
        ax.plot(xs, [0.03] * len(xs), "x", color=FAILED, transform=ax.get_xaxis_transform())
        ax.plot([], [], "x", color=FAILED, label="no metric (see table)")


def slices(sweep: Sweep) -> str:
    """One panel per parameter: the metric against the parameter, on its own scale."""
    params = sweep.parameters
    cols = min(3, len(params))
    rows = math.ceil(len(params) / cols)
    with drawing("slices", 3.6 * cols + 0.4, 2.9 * rows) as figure:
        axes = figure.subplots(rows, cols, squeeze=False).flatten()
        for ax, param in zip(axes, params, strict=False):
            _param_axis(ax, param, sweep)
            measured = [t for t in sweep.measured() if param.id in t["parameters"]]
            xs = [position(param, sweep, t["parameters"][param.id]) for t in measured]
            ys = [t["metrics"][sweep.metric_id] for t in measured]
            ax.scatter(xs, ys, s=22, alpha=0.8, label="trial")
            for trial, x, y in zip(measured, xs, ys, strict=True):
                if trial["id"] == sweep.best_id:
                    ax.scatter([x], [y], s=70, color=BEST, label=f"best (trial {trial['id']})")
            unmeasured = [
                t for t in sweep.trials if t not in measured and param.id in t["parameters"]
            ]
            _failed_marks(
                ax, [position(param, sweep, t["parameters"][param.id]) for t in unmeasured]
            )
            ax.set_ylabel(sweep.metric_id)
        for ax in axes[len(params) :]:
            ax.set_visible(False)
        axes[0].legend(fontsize=8)
        return to_svg(figure)


def best_so_far(values: list[float], goal: str) -> list[float]:
    """The running best of ``values`` (max for MAXIMIZE, else min)."""
    pick = max if goal == "MAXIMIZE" else min
    best: list[float] = []
    for value in values:
        best.append(pick(best[-1], value) if best else value)
    return best


def history(sweep: Sweep) -> str:
    """The metric of every trial in trial order, with the best-so-far line."""
    with drawing("history", 7.5, 3.2) as figure:
        ax = figure.subplots()
        measured = sweep.measured()
        xs = [int(t["id"]) for t in measured]
        ys = [t["metrics"][sweep.metric_id] for t in measured]
        ax.scatter(xs, ys, s=22, alpha=0.8, label="trial")
        if xs:
            line = best_so_far(ys, sweep.goal)
            ax.step(
                [*xs, max(int(t["id"]) for t in sweep.trials)],
                [*line, line[-1]],
                "-",
                where="post",
                color=BEST,
                label=f"best so far ({sweep.goal.lower()})",
            )
        _failed_marks(ax, [float(t["id"]) for t in sweep.trials if t not in measured])
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("trial")
        ax.set_ylabel(sweep.metric_id)
        ax.legend(fontsize=8)
        return to_svg(figure)


def _trial_colorbar(figure: Figure, ax: Axes, low: int, high: int) -> None:
    shades = ScalarMappable(Normalize(low, high), SHADES)
    figure.colorbar(shades, ax=ax, label="trial")


def step_curves(sweep: Sweep) -> str | None:
    """Every trial's reported metric against its step; None when no trial has steps. A
    trial stopped early is dashed, with an X at the step it stopped at."""
    curves = [(t, sweep.steps.get(t["id"], [])) for t in sweep.trials]
    curves = [(t, steps) for t, steps in curves if steps]
    if not curves:
        return None
    with drawing("steps", 7.5, 3.4) as figure:
        ax = figure.subplots()
        numbers = [int(t["id"]) for t, _ in curves]
        low, high = min(numbers), max(max(numbers), min(numbers) + 1)
        for trial, steps in curves:
            best = trial["id"] == sweep.best_id
            stopped = sweep.stopped.get(trial["id"])
            shade = (int(trial["id"]) - low) / (high - low)
            color = BEST if best else SHADES(shade)
            label = f"trial {trial['id']}" + (" (best)" if best else "")
            ax.plot(
                [s for s, _ in steps],
                [v for _, v in steps],
                marker="." if len(steps) <= MARKED_STEPS else None,
                linestyle="--" if stopped else "-",
                linewidth=2.2 if best else 1.0,
                color=color,
                zorder=3 if best else 2,
                label=label + (f" (stopped at step {stopped.step})" if stopped else ""),
            )
            if stopped:
                at = [v for s, v in steps if s <= stopped.step] or [steps[0][1]]
                ax.plot([stopped.step], [at[-1]], "X", color=color, markersize=7, zorder=4)
        if sweep.stopped:
            ax.plot([], [], "X--", color=FAILED, label="stopped early (at the X)")
        if len(curves) <= LEGEND_TRIALS:
            ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
        else:
            _trial_colorbar(figure, ax, low, high)
            if sweep.stopped:
                ax.legend(fontsize=8, loc="best", handles=ax.get_lines()[-1:])
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("step (global_step reported with the metric)")
        ax.set_ylabel(sweep.metric_id)
        return to_svg(figure)
