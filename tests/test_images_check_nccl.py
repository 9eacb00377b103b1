"""The NCCL >= 2.7 build check, run as the image build runs it (a real process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainpool.images import check_nccl

SCRIPT = Path(check_nccl.__file__)


def run(version: str, minimum: str = "2.7") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NCCL_VERSION=version)
    return subprocess.run(
        [sys.executable, str(SCRIPT), minimum], env=env, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("2.21.5-1+cuda12.4", (2, 21, 5)), ("2.7", (2, 7)), ("", None), ("unknown", None)],
)
def test_versions_parse(text: str, parsed: tuple[int, ...] | None) -> None:
    assert check_nccl.parse_version(text) == parsed


def test_old_nccl_fails_the_build() -> None:
    done = run("2.6.4-1")
    assert done.returncode == 1
    assert done.stderr == (
        "NCCL 2.6.4 (from NCCL_VERSION) is older than 2.7: the Reduction Server plugin needs "
        "NCCL >= 2.7; use a base image with a newer NCCL\n"
    )


def test_new_enough_nccl_passes() -> None:
    done = run("2.21.5")
    assert (done.returncode, done.stdout) == (
        0,
        "NCCL 2.21.5 (from NCCL_VERSION) >= 2.7: fine for the Reduction Server plugin\n",
    )


def test_bad_minimum_is_refused() -> None:
    done = run("2.21.5", minimum="new")
    assert (done.returncode, done.stderr) == (
        2,
        "check_nccl: minimum 'new' is not a version; accepted: e.g. 2.7\n",
    )
