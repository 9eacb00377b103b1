"""The whole trials report: one HTML file, charts inline, nothing fetched from the network."""

from __future__ import annotations

from collections import Counter
from html import escape

from trainpool.reports.charts import history, slices, step_curves
from trainpool.reports.parallel import parallel_coordinates
from trainpool.reports.sweep_data import Sweep
from trainpool.reports.table import SORT_SCRIPT, trials_table

STYLE = """
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; margin: 1.5em;
       color: #222; max-width: 1100px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
p.note { color: #555; font-size: 0.9em; margin: 0.2em 0 0.6em; }
svg { max-width: 100%; height: auto; display: block; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; cursor: pointer; user-select: none; white-space: nowrap; }
th[data-order="asc"]::after { content: " \\25B2"; }
th[data-order="desc"]::after { content: " \\25BC"; }
td:last-child { white-space: pre-wrap; max-width: 45em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.best { font-weight: bold; background: #fff4e5; }
tr.stopped td:nth-child(2) { font-style: italic; color: #8a4b00; }
"""


def summary(sweep: Sweep) -> str:
    """One line: job state, trials per state, and the best trial with its parameters."""
    states = Counter(t["state"].lower() or "unknown" for t in sweep.trials)
    counts = ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
    if sweep.stopped:
        counts += f"; {len(sweep.stopped)} stopped early"
    line = f"{sweep.state or 'state unknown'}; {len(sweep.trials)} trials ({counts or 'none'})"
    best = next((t for t in sweep.trials if t["id"] == sweep.best_id), None)
    if best is None:
        return f"{line}; no trial reported {sweep.metric_id}."
    params = ", ".join(
        f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
        for k, v in best["parameters"].items()
    )
    value = best["metrics"][sweep.metric_id]
    return f"{line}; best: trial {best['id']}, {sweep.metric_id} = {value:.6g} with {params}."


def _section(title: str, note: str, body: str) -> list[str]:
    return [f"<h2>{escape(title)}</h2>", f'<p class="note">{escape(note)}</p>', body]


def trials_page(sweep: Sweep) -> str:
    """The report page of ``sweep``."""
    metric = sweep.metric_id
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(sweep.name)}: trials</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(sweep.name)}: {escape(metric)} ({escape(sweep.goal.lower())})</h1>",
        f"<p>{escape(summary(sweep))}</p>",
    ]
    if sweep.measured():
        parts += _section(
            f"{metric} against each parameter",
            "One point per trial that reported the metric, on the parameter's own scale; "
            "grey crosses: trials without a metric.",
            slices(sweep),
        )
        parts += _section(
            "Search history",
            f"{metric} of each trial in the order trials started, and the best so far.",
            history(sweep),
        )
    curves = step_curves(sweep)
    note = "Every value each trial reported (its measurements), against the reported step."
    if sweep.stopped:
        note += " Dashed, with an X: stopped early by the study's stopping rule, at that step."
    parts += _section(
        f"{metric} per step",
        note if curves else "No trial has per-step measurements.",
        curves or "",
    )
    lines = parallel_coordinates(sweep)
    if lines:
        parts += _section(
            "Parallel coordinates",
            f"One line per measured trial across its parameters and {metric}; "
            "the best trial in red.",
            lines,
        )
    parts += _section("Trials", "Click a column heading to sort.", trials_table(sweep))
    parts += [f"<script>{SORT_SCRIPT}</script>", "</body></html>"]
    return "\n".join(parts) + "\n"
