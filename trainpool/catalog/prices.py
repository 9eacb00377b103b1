"""Hourly prices by machine (or accelerator) and region, on demand and on Spot.

``prices.csv`` (generated from saved pages) holds every region's figures it has; the us-central1
on-demand figure of a machine or GPU it lacks comes from ``machines.csv``,
``fixed_gpu_machines.csv`` or ``accelerators.csv``. A price the catalog lacks is None.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from trainpool.catalog.csvdata import flag, number, read_rows
from trainpool.catalog.tables import accelerators, machines

HOME_REGION = "us-central1"


@dataclass(frozen=True)
class Price:
    """USD per hour of one VM (or one GPU) in one region; Spot is None when not found."""

    on_demand: float | None
    spot: float | None
    source: str
    verified: bool


@cache
def price_table() -> dict[str, dict[str, Price]]:
    """Name → region → price."""
    out: dict[str, dict[str, Price]] = {}
    for name, machine in machines().items():
        if machine.price_usd_per_hour is not None:
            out.setdefault(name, {})[HOME_REGION] = Price(
                machine.price_usd_per_hour, None, machine.source, machine.verified
            )
    for name, acc in accelerators().items():
        if acc.price_usd_per_gpu_hour is not None:
            out.setdefault(name, {})[HOME_REGION] = Price(
                acc.price_usd_per_gpu_hour, None, acc.source, acc.verified
            )
    for row in read_rows("prices.csv"):
        out.setdefault(row["name"], {})[row["region"]] = Price(
            number(row["on_demand_usd_per_hour"]),
            number(row["spot_usd_per_hour"]),
            row["source"],
            flag(row["verified"]),
        )
    return out


def hourly(name: str, region: str = HOME_REGION, *, spot: bool = False) -> float | None:
    """USD per hour of ``name`` in ``region`` (on Spot with ``spot``), or None when not found."""
    found = price_table().get(name, {}).get(region)
    if found is None:
        return None
    return found.spot if spot else found.on_demand


@cache
def priced_regions(name: str) -> frozenset[str]:
    """Regions with an on-demand price for ``name``."""
    return frozenset(r for r, p in price_table().get(name, {}).items() if p.on_demand is not None)
