"""Vertex's prebuilt training containers: which URIs exist, with which framework and Python.

``data/prebuilt_containers.csv`` lists every training image of Vertex's "Prebuilt
containers for custom training" page (``verified=true``; the ``us-``, ``europe-`` and
``asia-docker.pkg.dev/vertex-ai/training/`` copies of each), and legacy
``gcr.io/cloud-aiplatform/training/`` URIs found in Google's samples (``verified=false``),
each with its source. ``data/prebuilt_packages.csv`` lists the versions of the packages
an image ships where the page says ("Included dependencies").

The page: "Using image names without the ``latest`` tag isn't supported. You must use an
image with the ``latest`` tag." A URI without a tag is Docker's ``:latest``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cache

from trainpool.catalog.csvdata import flag, read_rows

GOOGLE_TRAINING_IMAGE = re.compile(
    r"^(?:[a-z0-9-]+-docker\.pkg\.dev/vertex-ai/training/"
    r"|(?:[a-z]+\.)?gcr\.io/cloud-aiplatform/training/)"
)
"""Where Vertex's own training images live (Artifact Registry, and the legacy gcr.io)."""


@dataclass(frozen=True)
class PrebuiltImage:
    """One prebuilt training image: ``framework`` is ``tensorflow``, ``pytorch``,
    ``xgboost``, ``scikit-learn`` or ``ray``; ``version`` its series (``2.8``)."""

    uri: str
    framework: str
    version: str
    python: str
    accelerator: str
    source: str
    verified: bool


@dataclass(frozen=True)
class IncludedPackage:
    """A package an image ships, at the version its docs list."""

    package: str
    version: str
    source: str


@cache
def prebuilt_images() -> dict[str, PrebuiltImage]:
    """Every known prebuilt training image by URI (with its ``:latest`` tag)."""
    return {
        row["uri"]: PrebuiltImage(
            row["uri"],
            row["framework"],
            row["version"],
            row["python"],
            row["accelerator"],
            row["source"],
            flag(row["verified"]),
        )
        for row in read_rows("prebuilt_containers.csv")
    }


def _with_tag(uri: str) -> str:
    last = uri.rsplit("/", 1)[-1]
    return uri if ":" in last or "@" in last else f"{uri}:latest"


def is_google_training_image(uri: str) -> bool:
    """Whether ``uri`` names an image in Vertex's own training repositories."""
    return bool(GOOGLE_TRAINING_IMAGE.match(uri.strip()))


def prebuilt_image(uri: str) -> PrebuiltImage | None:
    """The prebuilt training image ``uri`` names (no tag: ``:latest``), or None."""
    return prebuilt_images().get(_with_tag(uri.strip()))


def closest_prebuilt(uri: str, n: int = 5) -> list[str]:
    """The known prebuilt image URIs closest to ``uri``, closest first."""
    known = list(prebuilt_images())
    found = difflib.get_close_matches(_with_tag(uri.strip()), known, n=n, cutoff=0.0)
    return found


@cache
def _included() -> dict[tuple[str, str], tuple[IncludedPackage, ...]]:
    table: dict[tuple[str, str], list[IncludedPackage]] = {}
    for row in read_rows("prebuilt_packages.csv"):
        key = (row["framework"], row["version"])
        table.setdefault(key, []).append(
            IncludedPackage(row["package"], row["package_version"], row["source"])
        )
    return {key: tuple(packages) for key, packages in table.items()}


def included_packages(framework: str, version: str) -> tuple[IncludedPackage, ...]:
    """The packages, with versions, that the docs list for ``framework`` ``version``'s
    images (empty where the docs give none)."""
    return _included().get((framework, version), ())
