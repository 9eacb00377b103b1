"""Locations: which names Vertex runs in (the catalog's regions), and Google's Reduction
Server image for a location's multi-region."""

from __future__ import annotations

from trainpool import catalog
from trainpool.errors import brief
from trainpool.plan.errors import PlanError, Problem

SHOWN_LOCATIONS = 8

REDUCER_IMAGE_PATH = "vertex-ai-restricted/training/reductionserver:latest"
_MULTI_REGIONS = (
    (("us-", "northamerica-", "southamerica-"), "us"),
    (("europe-",), "europe"),
    (("asia-", "australia-", "me-"), "asia"),
)


def multi_region(location: str) -> str:
    """``us``, ``europe`` or ``asia`` for a Vertex location such as ``us-central1``."""
    for prefixes, region in _MULTI_REGIONS:
        if any(location.startswith(p) and len(location) > len(p) for p in prefixes):
            return region
    accepted = ", ".join(p + "*" for prefixes, _ in _MULTI_REGIONS for p in prefixes)
    raise PlanError(
        [Problem("location", f"{location!r} is not a known location; accepted: {accepted}")]
    )


def reducer_image(location: str) -> str:
    """The reducer image closest to ``location``."""
    return f"{multi_region(location)}-docker.pkg.dev/{REDUCER_IMAGE_PATH}"


def location_problem(location: object) -> str | None:
    """Why ``location`` is not a Vertex AI region of the catalog (``vertex_regions.csv``, from
    Vertex's locations page), naming the regions nearest first; None when it is one."""
    regions = catalog.vertex_regions()
    if isinstance(location, str) and location in regions:
        return None
    near = catalog.nearest_first(frozenset(regions), location if isinstance(location, str) else "")
    shown = ", ".join(near[:SHOWN_LOCATIONS])
    more = f" (+{len(near) - SHOWN_LOCATIONS} more: `trainpool catalog`)" if len(near) > 8 else ""
    return (
        f"{brief(location)} is not a known location; accepted: a Vertex AI region, nearest "
        f"first: {shown}{more}"
    )


def check_location_name(location: object, field: str = "location") -> None:
    """PlanError unless ``location`` is a Vertex AI region (:func:`location_problem`)."""
    problem = location_problem(location)
    if problem is not None:
        raise PlanError([Problem(field, problem)])
