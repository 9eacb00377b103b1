"""``trainpool.testing``: a user's test suite gets an emulator through one fixture.

The sample suite (tests/fixtures/user_code/test_suite_sample.py) names the
``vertex_emulator`` fixture and uses the SDK and google-cloud-storage as against Google
Cloud; it is run by pytest in a process of its own, as a user runs their suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(180)
SUITE = Path(__file__).parent / "fixtures" / "user_code" / "test_suite_sample.py"


def test_a_users_suite_runs_against_the_emulator_through_the_fixture(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("VERTEX_AI_EMULATOR_HOST",)}
    env.pop("STORAGE_EMULATOR_HOST", None)
    # the plugin by name, whether or not the pytest11 entry point of this install is there
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:trainpool",
            "-p",
            "trainpool.testing",
            str(SUITE),
            "--rootdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=170,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout


def test_the_environment_is_restored_after_the_block(tmp_path: Path) -> None:
    from trainpool.testing import emulated_vertex

    before = {k: os.environ.get(k) for k in ("VERTEX_AI_EMULATOR_HOST", "STORAGE_EMULATOR_HOST")}
    with emulated_vertex(tmp_path / "root") as emu:
        assert os.environ["VERTEX_AI_EMULATOR_HOST"] == emu.address
        assert os.environ["STORAGE_EMULATOR_HOST"] == emu.storage_address
    assert {k: os.environ.get(k) for k in before} == before
