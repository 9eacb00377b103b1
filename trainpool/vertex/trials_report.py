"""An HTML page of a sweep's trials: a table and an inline SVG plot of metric per trial."""

from __future__ import annotations

from html import escape
from typing import Any

WIDTH, HEIGHT, PAD = 480, 240, 40
BOTTOM = HEIGHT - PAD


def svg_plot(rows: list[dict[str, Any]], metric_id: str, best_id: str | None) -> str:
    """Metric per trial id as points on an SVG scatter plot; the best trial drawn larger."""
    points = [
        (int(r["id"]), float(r["metrics"][metric_id]))
        for r in rows
        if isinstance(r["metrics"].get(metric_id), int | float)
    ]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(metric_id)} per trial">',
        f'<line x1="{PAD}" y1="{BOTTOM}" x2="{WIDTH - PAD}" y2="{BOTTOM}" stroke="#444"/>',
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{HEIGHT - PAD}" stroke="#444"/>',
        f'<text x="{WIDTH // 2}" y="{HEIGHT - 8}" text-anchor="middle">trial</text>',
        f'<text x="8" y="{PAD - 12}">{escape(metric_id)}</text>',
    ]
    if points:
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        x0, x1 = min(xs), max(max(xs), min(xs) + 1)
        y0, y1 = min(ys), max(ys)
        y1 = y1 if y1 > y0 else y0 + 1.0
        span_x, span_y = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
        parts.append(f'<text x="{PAD - 4}" y="{HEIGHT - PAD}" text-anchor="end">{y0:.4g}</text>')
        parts.append(f'<text x="{PAD - 4}" y="{PAD + 4}" text-anchor="end">{y1:.4g}</text>')
        for trial, value in points:
            cx = PAD + (trial - x0) / (x1 - x0) * span_x
            cy = HEIGHT - PAD - (value - y0) / (y1 - y0) * span_y
            best = str(trial) == best_id
            parts.append(
                f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{6 if best else 4}" '
                f'fill="{"#d62728" if best else "#1f77b4"}"><title>trial {trial}: {value:.6g}'
                "</title></circle>"
            )
    parts.append("</svg>")
    return "\n".join(parts)


def _cell(value: Any) -> str:
    return escape(
        "" if value is None else f"{value:.6g}" if isinstance(value, float) else str(value)
    )


def trials_html(rows: list[dict[str, Any]], metric_id: str, goal: str, best_id: str | None) -> str:
    """The whole HTML page: heading, plot, and one table row per trial."""
    names = sorted({name for r in rows for name in r["parameters"]})
    head = "".join(f"<th>{escape(n)}</th>" for n in ["trial", "state", *names, metric_id])
    body = []
    for r in rows:
        cells = [r["id"], r["state"], *(r["parameters"].get(n) for n in names)]
        cells.append(r["metrics"].get(metric_id))
        style = ' style="font-weight:bold"' if r["id"] == best_id else ""
        body.append(f"<tr{style}>" + "".join(f"<td>{_cell(c)}</td>" for c in cells) + "</tr>")
    best = f"best trial: {escape(best_id)}" if best_id else "no trial reported the metric"
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html><head><meta charset="utf-8"><title>trials</title></head><body>',
            f"<h1>{escape(metric_id)} ({escape(goal.lower())}), {len(rows)} trials; {best}</h1>",
            svg_plot(rows, metric_id, best_id),
            f'<table border="1"><tr>{head}</tr>',
            *body,
            "</table></body></html>",
        ]
    )
