"""Fixtures the tests share.

``vertex_emulator`` (every Google client of this process pointed at a fresh emulator) is the
plugin users get, :mod:`trainpool.testing`; :func:`sdk_emulator` is it on a root that shares
this session's prebuilt-image environments and holds the host-packages image, for tests that
run Google's SDK as a notebook does. :func:`emu` is an emulator with only trainpool's own
clients (``VERTEX_AI_EMULATOR_HOST``) pointed at it, for tests of the API itself. A module
may override either (``def emu(emu, monkeypatch)`` adds to it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.engine import engine, python_base, torch_image  # noqa: F401 - the container tests'
from fixtures.environments import share_environments
from fixtures.host_image import host_image
from fixtures.vertex import PROJECT

import trainpool.emulator as emulator
from trainpool import config
from trainpool.emulator.jobs import containers
from trainpool.testing import emulated_vertex


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[emulator.Emulator]:
    """An emulator on ``tmp_path/root``; trainpool's clients pointed at it."""
    with emulator.start(tmp_path / "root") as running:
        monkeypatch.setenv(config.EMULATOR_ENV, running.address)
        yield running


@pytest.fixture
def sdk_emulator(tmp_path: Path) -> Iterator[emulator.Emulator]:
    """``vertex_emulator`` on ``tmp_path/root`` (shared environments, the host image)."""
    root = share_environments(tmp_path / "root")
    host_image(root)
    with emulated_vertex(root, project=PROJECT) as running:
        yield running


@pytest.fixture
def no_container_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Emulators started after it find no container engine (``TRAINPOOL_CONTAINERS=off``):
    for tests of what runs without one (builds into the local image store, replicas that
    imitate their images), wherever CI runs an engine."""
    monkeypatch.setenv(containers.SWITCH_ENV, "off")
