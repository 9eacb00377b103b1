"""Where Vertex training offers each accelerator, and which regions are nearest to a location.

Nearest first means: the location's own geography first (the part of the region name before
the first dash: us, europe, asia, ...), then the same continent (Americas: us, northamerica,
southamerica; Europe; Asia-Pacific: asia, australia; Middle East and Africa: me, africa), then
the rest; alphabetical within each group. It is a rule of thumb, not a latency measurement.
"""

from __future__ import annotations

from functools import cache

from trainpool.catalog.csvdata import read_rows

CONTINENTS = {
    "us": "americas",
    "northamerica": "americas",
    "southamerica": "americas",
    "europe": "europe",
    "asia": "asia-pacific",
    "australia": "asia-pacific",
    "me": "middle-east-africa",
    "africa": "middle-east-africa",
}


@cache
def vertex_regions() -> tuple[str, ...]:
    """The regions where Vertex AI runs (its locations page)."""
    return tuple(row["region"] for row in read_rows("vertex_regions.csv"))


@cache
def offering_regions() -> dict[str, frozenset[str]]:
    """Machine type (or cloud-tpu/ENUM) → the Vertex regions that offer it."""
    out: dict[str, set[str]] = {}
    for row in read_rows("regions.csv"):
        out.setdefault(row["name"], set()).add(row["region"])
    return {name: frozenset(regions) for name, regions in out.items()}


def regions_of(name: str) -> frozenset[str] | None:
    """The regions that offer ``name``, or None when the catalog has no region data for it."""
    return offering_regions().get(name)


def geography(region: str) -> str:
    """``us`` for us-central1, ``europe`` for europe-west4."""
    return region.split("-", 1)[0]


def nearest_first(regions: frozenset[str] | set[str], location: str) -> list[str]:
    """``regions`` ordered nearest to ``location`` first (see the module docstring)."""
    home = geography(location)
    continent = CONTINENTS.get(home, home)

    def distance(region: str) -> tuple[int, str]:
        if geography(region) == home:
            return (0, region)
        return (1 if CONTINENTS.get(geography(region)) == continent else 2, region)

    return sorted(regions, key=distance)
