"""A matplotlib figure as SVG markup to inline in HTML: text stays text, ids stay unique."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import matplotlib
import numpy
from matplotlib import colormaps
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

BEST = "#d62728"
FAILED = "#7f7f7f"
SHADES = ListedColormap(colormaps["viridis"](numpy.linspace(0.0, 0.85, 256)))  # no pale yellow


@contextmanager
def drawing(salt: str, width: float, height: float) -> Iterator[Figure]:
    """A figure in the report's style; ``salt`` keeps its SVG ids apart from other charts'."""
    style: dict[RcKeyType, Any] = {
        "svg.fonttype": "none",  # <text> the browser draws and a search finds, not glyph paths
        "svg.hashsalt": salt,
        "font.family": "sans-serif",
        "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"],
        "font.size": 9,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }
    with matplotlib.rc_context(style):
        yield Figure(figsize=(width, height), layout="constrained")


def to_svg(figure: Figure) -> str:
    """The figure's ``<svg>`` element alone (no XML prolog, no metadata), sized by CSS."""
    out = io.StringIO()
    figure.savefig(
        out,
        format="svg",
        bbox_inches="tight",  # every label inside the picture, whatever its length
        pad_inches=0.1,
        metadata={"Date": None, "Creator": None},
    )
    text = out.getvalue()
    return text[text.index("<svg") :]
