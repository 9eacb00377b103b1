"""Fixtures the tests share.

``vertex_emulator`` (every Google client of this process pointed at a fresh emulator) is the
plugin users get, :mod:`trainpool.testing`; :func:`sdk_emulator` is it on a root that shares
this session's prebuilt images' stand-ins and holds the host-packages image, for tests that
run Google's SDK as a notebook does. :func:`emu` is an emulator with only trainpool's own
clients (``VERTEX_AI_EMULATOR_HOST``) pointed at it, for tests of the API itself. A module
may override either (``def emu(emu, monkeypatch)`` adds to it).

A container engine is a test's only when it asks for one (the ``engine`` fixture, or one
that needs it: ``python_base``, ``torch_image``): every other emulator finds none
(``TRAINPOOL_CONTAINERS=off``, :func:`engine_only_where_asked`), so that a test runs alike on
machines with and without an engine, and its made-up images (``img:1``, ``local/none``) run
as processes that imitate them: where an engine answers, a job naming an image that neither
it, nor the local image store, nor Vertex's prebuilt catalog has fails at once, as it would
on Vertex.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.engine import ASKED, engine, loopback_registry, python_base, torch_image  # noqa: F401 - the container tests'
from fixtures.host_image import host_image
from fixtures.stand_ins import share_stand_ins
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
    """``vertex_emulator`` on ``tmp_path/root`` (shared stand-ins, the host image)."""
    root = share_stand_ins(tmp_path / "root")
    host_image(root)
    with emulated_vertex(root, project=PROJECT) as running:
        yield running


@pytest.fixture
def no_container_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Emulators started after it find no container engine (``TRAINPOOL_CONTAINERS=off``):
    for tests of what runs without one (builds into the local image store, replicas that
    imitate their images), wherever CI runs an engine."""
    monkeypatch.setenv(containers.SWITCH_ENV, "off")


@pytest.fixture(scope="session", autouse=True)
def engine_only_where_asked() -> Iterator[None]:
    """No container engine for the session's emulators (module-scoped ones included); a test
    that asks for the engine gets it back (:func:`engine_for_those_who_ask`)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(containers.SWITCH_ENV, "off")
        yield


@pytest.fixture(autouse=True)
def engine_for_those_who_ask(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test that uses the ``engine`` fixture starts emulators that find it."""
    if "engine" in request.fixturenames:
        if ASKED:
            monkeypatch.setenv(containers.SWITCH_ENV, ASKED)
        else:
            monkeypatch.delenv(containers.SWITCH_ENV, raising=False)
