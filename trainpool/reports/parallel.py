"""Parallel coordinates: one vertical axis per parameter and one for the metric (SVG)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from matplotlib.axes import Axes
from matplotlib.ticker import LogLocator, MaxNLocator

from trainpool.reports.charts import categories
from trainpool.reports.figure import BEST, SHADES, drawing, to_svg
from trainpool.reports.sweep_data import Parameter, Sweep

Ticks = list[tuple[float, str]]
LABEL_BOX = {"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.5}


def _numeric(values: list[float], log: bool) -> tuple[Callable[[Any], float], Ticks]:
    """A map of values onto [0, 1] and the ticks to label, on a linear or log scale."""
    scale: Callable[[float], float] = math.log10 if log else float
    low, high = scale(min(values)), scale(max(values))
    if high == low:
        return (lambda _value: 0.5), [(0.5, f"{min(values):.4g}")]
    locator = LogLocator() if log else MaxNLocator(5)
    marks = [v for v in locator.tick_values(min(values), max(values)) if low <= scale(v) <= high]

    def place(value: Any) -> float:
        return (scale(float(value)) - low) / (high - low)

    ends = [
        v for v in (min(values), max(values)) if all(abs(place(v) - place(m)) > 0.1 for m in marks)
    ]
    return place, [(place(v), f"{v:.4g}") for v in sorted([*marks, *ends])]


def axis(param: Parameter, sweep: Sweep, trials: list[dict[str, Any]]) -> tuple[Callable, Ticks]:
    """How one parameter's values map onto its vertical axis, and that axis' ticks."""
    if param.scale == "categorical":
        names = categories(param, sweep)
        spread = max(1, len(names) - 1)
        ticks = [(i / spread if len(names) > 1 else 0.5, n) for i, n in enumerate(names)]
        where = dict(zip(names, (t[0] for t in ticks), strict=True))
        return (lambda value: where[str(value)]), ticks
    values = [float(t["parameters"][param.id]) for t in trials]
    return _numeric(values, param.scale == "log")


def _draw_axis(ax: Axes, index: int, ticks: Ticks) -> None:
    ax.axvline(index, color="#333", linewidth=0.8)
    for where, label in ticks:
        ax.plot([index - 0.03, index], [where, where], color="#333", linewidth=0.8)
        ax.text(index - 0.05, where, label, ha="right", va="center", fontsize=8, bbox=LABEL_BOX)


def parallel_coordinates(sweep: Sweep) -> str | None:
    """Each measured trial as a line across its parameters and metric; None below two params."""
    params = sweep.parameters
    trials = [t for t in sweep.measured() if all(p.id in t["parameters"] for p in params)]
    if len(params) < 2 or not trials:
        return None
    maps = [axis(p, sweep, trials) for p in params]
    metric = [float(t["metrics"][sweep.metric_id]) for t in trials]
    maps.append(_numeric(metric, log=False))
    titles = [f"{p.id} (log)" if p.scale == "log" else p.id for p in params] + [sweep.metric_id]
    with drawing("parallel", 2.2 * len(titles) + 1.0, 3.4) as figure:
        ax = figure.subplots()
        shade = maps[-1][0]
        places = [place for place, _ in maps[:-1]]
        for trial, value in zip(trials, metric, strict=True):
            ys = [place(trial["parameters"][p.id]) for place, p in zip(places, params, strict=True)]
            best = trial["id"] == sweep.best_id
            ax.plot(
                range(len(titles)),
                [*ys, shade(value)],
                color=BEST if best else SHADES(shade(value)),
                linewidth=2.4 if best else 1.0,
                alpha=1.0 if best else 0.7,
                zorder=3 if best else 2,
            )
        for index, (_, ticks) in enumerate(maps):
            _draw_axis(ax, index, ticks)
        ax.set_xticks(range(len(titles)), labels=titles)
        ax.set_yticks([])
        ax.grid(False)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        ax.set_xlim(-0.45, len(titles) - 0.9)
        ax.set_ylim(-0.05, 1.05)
        return to_svg(figure)
