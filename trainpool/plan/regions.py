"""Google's Reduction Server image for a location's multi-region."""

from __future__ import annotations

from trainpool.plan.errors import PlanError, Problem

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
