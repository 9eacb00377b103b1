"""`trainpool clock show | advance` against the emulator over real gRPC."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import trainpool.emulator as emulator
from trainpool import config
from trainpool.cli import app

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path) as running:
        monkeypatch.setenv(config.EMULATOR_ENV, running.address)
        yield running


def clock(*args: str) -> object:
    return CliRunner().invoke(app, ["clock", *args])


def test_show_and_advance_by_a_duration_and_to_a_time(emu: emulator.Emulator) -> None:
    shown = clock("show")
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.endswith("(+0d 00:00:00 ahead of real time)\n")
    moved = clock("advance", "1d12h")
    assert moved.exit_code == 0, moved.stderr
    assert moved.stdout.startswith("emulator time ")
    assert "(+1d 12:00:00 ahead of real time)" in moved.stdout
    assert emu.clock.offset_s == 1.5 * 86400
    to = clock("advance", "--to", "2099-12-31T03:00:00Z", "--wait")
    assert to.exit_code == 0, to.stderr
    assert to.stdout.startswith("emulator time 2099-12-31T03:00:0")


def test_bad_input_is_refused_naming_what_is_accepted(emu: emulator.Emulator) -> None:
    bad = clock("advance", "tomorrow")
    assert bad.exit_code == 2
    assert "DURATION: 'tomorrow' is not a duration; accepted: a number and a unit" in bad.stderr
    both = clock("advance", "1d", "--to", "2099-01-01T00:00:00Z")
    assert both.exit_code == 2 and "give exactly one" in both.stderr
    back = clock("advance", "--to", "2000-01-01T00:00:00Z")
    assert back.exit_code == 1
    assert "INVALID_ARGUMENT: to: 2000-01-01T00:00:00+00:00 is before" in back.stderr
    assert emu.clock.offset_s == 0


def test_without_an_emulator_there_is_no_clock_to_move(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(config.EMULATOR_ENV, raising=False)
    result = clock("advance", "1d")
    assert result.exit_code == 1
    assert "VERTEX_AI_EMULATOR_HOST is not set" in result.stderr
