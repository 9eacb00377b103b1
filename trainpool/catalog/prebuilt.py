"""Vertex's prebuilt training containers: which URIs exist, with which framework and Python.

``data/prebuilt_containers.csv`` lists every training image of Vertex's "Prebuilt
containers for custom training" page (``verified=true``; the ``us-``, ``europe-`` and
``asia-docker.pkg.dev/vertex-ai/training/`` copies of each), and legacy
``gcr.io/cloud-aiplatform/training/`` URIs found in Google's samples (``verified=false``),
each with its source. The packages each image ships are :mod:`trainpool.catalog.included`'s,
which only the emulator's stand-ins read.

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


_NAME = re.compile(
    r"^(?P<framework>[a-z-]+?)-(?P<kind>cpu|gpu|tpu|xla)\.(?P<version>\d+(?:-\d+)*)"
    r"(?:\.(?:py|cp)(?P<python>\d+))?(?::(?P<tag>[^/@]+))?$"
)
"""A training image's name as Vertex spells them: ``tf-cpu.2-8``, ``pytorch-xla.2-4.py310``."""
_FRAMEWORKS = {
    "tf": "tensorflow",
    "pytorch": "pytorch",
    "xgboost": "xgboost",
    "sklearn": "scikit-learn",
    "scikit-learn": "scikit-learn",
    "ray": "ray",
}
_KINDS = {"cpu": "cpu", "xla": "cpu", "gpu": "gpu", "tpu": "tpu"}
"""The machine a name's kind runs on: Vertex's PyTorch CPU images of 1.7 and later are
``pytorch-xla`` (the page's "CPU" rows), so a ``-cpu`` name looks for them too."""


@dataclass(frozen=True)
class _Named:
    framework: str
    kind: str
    version: tuple[int, ...]
    python: str


def _named(uri: str) -> _Named | None:
    found = _NAME.match(uri.rsplit("/", 1)[-1])
    if found is None or found["framework"] not in _FRAMEWORKS:
        return None
    return _Named(
        _FRAMEWORKS[found["framework"]],
        _KINDS[found["kind"]],
        tuple(int(part) for part in found["version"].split("-")),
        found["python"] or "",
    )


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def _distance(asked: tuple[int, ...], known: tuple[int, ...]) -> tuple[int, ...]:
    """How far ``known`` is from ``asked``: the first differing part decides, nearer first."""
    width = max(len(asked), len(known))
    a = asked + (0,) * (width - len(asked))
    k = known + (0,) * (width - len(known))
    return tuple(abs(x - y) for x, y in zip(a, k, strict=True))


def _host(uri: str) -> str:
    return uri.split("/", 1)[0]


def closest_prebuilt(uri: str, n: int = 5) -> list[str]:
    """The known prebuilt image URIs closest to ``uri``, closest first.

    A name of Vertex's form (``pytorch-cpu.2-4.py310``) is read as what it asks for: the
    same framework first, then the same kind of machine (a ``-cpu`` name gets CPU images,
    among them ``pytorch-xla``, Vertex's PyTorch CPU images), then the same version, the
    same registry host, the nearest version and the same Python; anything else by spelling
    alone."""
    asked = _with_tag(uri.strip())
    named = _named(asked)
    images = prebuilt_images()
    if named is None:
        return difflib.get_close_matches(asked, list(images), n=n, cutoff=0.0)

    def rank(known: PrebuiltImage) -> tuple[object, ...]:
        python = known.python.replace(".", "")
        distance = _distance(named.version, _version(known.version))
        return (
            known.framework != named.framework,
            known.accelerator != named.kind,
            any(distance),
            _host(known.uri) != _host(asked),
            distance,
            bool(named.python) and python != named.python,
            -difflib.SequenceMatcher(None, asked, known.uri).ratio(),
        )

    return sorted(images, key=lambda known: rank(images[known]))[:n]
