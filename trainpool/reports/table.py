"""The trials table: one row per trial, every column sortable by a click (a few lines of JS)."""

from __future__ import annotations

from html import escape
from typing import Any

from trainpool.reports.sweep_data import Sweep

SORT_SCRIPT = """
for (const table of document.querySelectorAll("table.sortable")) {
  table.tHead.rows[0].querySelectorAll("th").forEach((th, col) => {
    th.addEventListener("click", () => {
      const up = th.dataset.order !== "asc";
      table.tHead.querySelectorAll("th").forEach((h) => delete h.dataset.order);
      th.dataset.order = up ? "asc" : "desc";
      const key = (row) => row.cells[col].dataset.sort ?? row.cells[col].textContent;
      const rows = Array.from(table.tBodies[0].rows).sort((a, b) => {
        const x = key(a), y = key(b);
        if (x === "" || y === "") return (x === "") - (y === "");
        const nx = Number(x), ny = Number(y);
        const order = isNaN(nx) || isNaN(ny) ? x.localeCompare(y) : nx - ny;
        return up ? order : -order;
      });
      table.tBodies[0].append(...rows);
    });
  });
}
"""


def cell(value: Any) -> str:
    """A ``<td>``; numbers sort by value and show 6 significant digits."""
    if value is None:
        return '<td data-sort=""></td>'
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f'<td data-sort="{value!r}" class="num">{value:.6g}</td>'
    return f"<td>{escape(str(value))}</td>"


def trials_table(sweep: Sweep) -> str:
    """The table's HTML; the best trial's row is marked, and each trial a stopping rule
    stopped early (its state says so, with the step it stopped at and why)."""
    names = [p.id for p in sweep.parameters]
    names += sorted({n for t in sweep.trials for n in t["parameters"]} - set(names))
    stop_column = ["stopped at step"] if sweep.stopped else []
    heads = ["trial", "state", *names, f"{sweep.metric_id} (final)", "steps", *stop_column]
    heads.append("message")
    lines = [
        '<table class="sortable" id="trials">',
        "<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in heads) + "</tr></thead><tbody>",
    ]
    for trial in sweep.trials:
        steps = len(sweep.steps.get(trial["id"], []))
        stopped = sweep.stopped.get(trial["id"])
        state = f"{trial['state']}, stopped early" if stopped else trial["state"]
        cells = [
            cell(int(trial["id"])),
            cell(state),
            *(cell(trial["parameters"].get(n)) for n in names),
            cell(trial["metrics"].get(sweep.metric_id)),
            cell(steps or None),
            *([cell(stopped.step if stopped else None)] if stop_column else []),
            cell(trial["infeasible_reason"] or (stopped.why if stopped else None)),
        ]
        marks = [
            m for m, on in (("best", trial["id"] == sweep.best_id), ("stopped", stopped)) if on
        ]
        kind = f' class="{" ".join(marks)}"' if marks else ""
        lines.append(f"<tr{kind}>" + "".join(cells) + "</tr>")
    lines.append("</tbody></table>")
    return "\n".join(lines)
