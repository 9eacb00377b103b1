"""The generated CSVs, as rows, from the saved pages (one function per file)."""

from __future__ import annotations

from trainpool.catalog.refresh.pages import Page, load

Rows = list[dict[str, str]]


def _flag(page: Page) -> str:
    return "true" if page.verified else "false"


def vertex_regions() -> Rows:
    page = load("vertex_locations")
    return [
        {
            "region": r["region"],
            "geography": r["geography"],
            "source": page.source,
            "verified": _flag(page),
        }
        for r in page.rows
    ]


def tpu_machines() -> Rows:
    page = load("vertex_tpu_configure_compute")
    return [{**row, "source": page.source, "verified": _flag(page)} for row in page.rows]


def regions() -> Rows:
    """Which regions offer each fixed-GPU or TPU machine type, restricted to Vertex regions."""
    vertex = {row["region"] for row in load("vertex_locations").rows}
    out = []
    for name in ("gce_accelerator_regions", "tpu_regions"):
        page = load(name)
        for row in page.rows:
            out += [
                {
                    "name": row["name"],
                    "region": region,
                    "source": page.source,
                    "verified": _flag(page),
                }
                for region in row["regions"].split()
                if region in vertex
            ]
    return out


def prices() -> Rows:
    out = []
    for name in (
        "cyclenerd_pricing_us_central1",
        "skypilot_regional_prices",
        "skypilot_tpu_prices",
    ):
        page = load(name)
        out += [
            {
                "name": row["name"],
                "region": row["region"],
                "on_demand_usd_per_hour": row["on_demand"],
                "spot_usd_per_hour": row["spot"],
                "source": page.source,
                "verified": _flag(page),
            }
            for row in page.rows
        ]
    return out


def unsupported_machines() -> Rows:
    page = load("vertex_unsupported")
    return [{**row, "source": page.source, "verified": _flag(page)} for row in page.rows]


GENERATED = {
    "vertex_regions.csv": vertex_regions,
    "tpu_machines.csv": tpu_machines,
    "regions.csv": regions,
    "prices.csv": prices,
    "unsupported_machines.csv": unsupported_machines,
}
"""Generated file → its builder. The other CSVs are edited by hand, each row with its source."""
