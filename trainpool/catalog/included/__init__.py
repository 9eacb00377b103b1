"""The packages each Vertex prebuilt training image ships, with their versions.

``data/prebuilt_packages.csv`` (``framework, version, package, package_version, source,
verified``) lists the versions of the packages an image ships where Google's "Prebuilt
containers for custom training" page says ("Included dependencies"), and (``verified=false``,
the source saying how) the versions of the image's time of what the page names no version
for: protobuf, and for the scikit-learn 1.6, XGBoost 2.1 and PyTorch 2.4 images, of whose
list it holds only a few, every other distribution their stand-ins hold
(``scripts/prebuilt_time_pins.py``).

Only the emulator's stand-ins of those images read it (:mod:`trainpool.emulator.stand_ins`).
It is a package of its own, with its data beside it, so that the components image, which
carries :mod:`trainpool.catalog` and the data beside it for ``prebuilt_image()``, does not
carry this table: an edit of it needs no ``trainpool publish``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from trainpool.catalog.csvdata import flag, read_rows


@dataclass(frozen=True)
class IncludedPackage:
    """A package an image ships, at the version its docs list; ``verified`` false where the
    docs name none and ``source`` says where the version comes from (protobuf for the
    scikit-learn 1.0 image; the dependencies of the scikit-learn 1.6 image, of its time)."""

    package: str
    version: str
    source: str
    verified: bool = True


@cache
def _included() -> dict[tuple[str, str], tuple[IncludedPackage, ...]]:
    table: dict[tuple[str, str], list[IncludedPackage]] = {}
    for row in read_rows("prebuilt_packages.csv", __name__):
        key = (row["framework"], row["version"])
        table.setdefault(key, []).append(
            IncludedPackage(
                row["package"], row["package_version"], row["source"], flag(row["verified"])
            )
        )
    return {key: tuple(packages) for key, packages in table.items()}


def documented_versions() -> tuple[tuple[str, str], ...]:
    """Every ``(framework, version)`` whose included packages the docs list."""
    return tuple(sorted(_included()))


def included_packages(framework: str, version: str) -> tuple[IncludedPackage, ...]:
    """The packages, with versions, that the docs list for ``framework`` ``version``'s
    images (empty where the docs give none)."""
    return _included().get((framework, version), ())
