"""The nearest installable version of a prebuilt image's package
(emulator/stand_ins/pip_versions.py)."""

from __future__ import annotations

import pytest

from trainpool.emulator.stand_ins.pip_versions import Choice, nearest

NUMPY_ON_PY311 = ["1.23.2", "1.23.3", "1.23.5", "1.24.0", "1.26.4", "2.0.0rc1", "2.0.0"]


@pytest.mark.parametrize(
    ("requested", "versions", "chosen"),
    [
        # no build of 1.18.5 for this Python: the first series above, its newest patch
        ("1.18.5", NUMPY_ON_PY311, "1.23.5"),
        ("2.8.*", ["2.12.0rc0", "2.12.0", "2.12.1", "2.13.0"], "2.12.1"),
        ("0.23.1", ["1.1.3", "1.2.0rc1", "1.2.0"], "1.1.3"),
        # nothing above: the newest below
        ("9.0", NUMPY_ON_PY311, "2.0.0"),
        # pre-releases are never chosen; none at all is None
        ("1.0", ["2.0.0rc1", "2.0.0.dev1"], None),
        ("1.0", [], None),
    ],
)
def test_nearest(requested: str, versions: list[str], chosen: str | None) -> None:
    assert nearest(requested, versions) == chosen


def test_a_choice_is_exact_when_it_is_the_version_or_in_the_series() -> None:
    assert Choice("xgboost", "1.1.1", "1.1.1").exact
    assert Choice("tensorflow-cpu", "2.17.*", "2.17.1").exact
    assert not Choice("tensorflow-cpu", "2.8.*", "2.12.1").exact
    assert not Choice("tensorflow-cpu", "2.1.*", "2.12.1").exact
    assert Choice("scikit-learn", "1.0", "1.0.0").exact
