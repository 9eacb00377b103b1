"""`trainpool models versions | bless` against the emulator: the gate's versions, a rollback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import trainpool.emulator as emulator
from trainpool import config
from trainpool.cli import app
from trainpool.vertex import clients, models

pytestmark = pytest.mark.timeout(120)

TARGET = ["--project", "demo", "--location", "us-central1"]
IMAGE = "us-docker.pkg.dev/vertex-ai/prediction/sklearn-cpu.1-0:latest"


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with emulator.start(tmp_path) as running:
        monkeypatch.setenv(config.EMULATOR_ENV, running.address)
        monkeypatch.setattr(models, "SETTLE_S", 0.1)
        yield


def cli(*args: str) -> object:
    return CliRunner().invoke(app, ["models", *args])


def test_versions_show_the_gates_record_and_bless_rolls_back_in_one_move(emu: None) -> None:
    gate = models.Gate()
    for night, loss in enumerate((0.5, 0.4, 0.45), start=1):
        models.promote_if_better(
            "demo", "us-central1", "nightly", f"gs://bkt/{night}/", IMAGE, loss, gate
        )
    listed = cli("versions", "nightly", *TARGET)
    assert listed.exit_code == 0, listed.stderr
    rows = listed.stdout.splitlines()
    assert rows[0].endswith("models/1000: 3 version(s)")
    assert [row.split()[:4] for row in rows[2:]] == [
        ["1", "default", "loss", "0.5"],
        ["2", "blessed", "loss", "0.4"],
        ["3", "-", "loss", "0.45"],
    ]
    rolled = cli("bless", "nightly", "1", *TARGET)
    assert rolled.exit_code == 0, rolled.stderr
    assert rolled.stdout.strip().endswith("models/1000@blessed -> version 1")
    held = {
        v.version_id: sorted(v.version_aliases)
        for v in clients.model_client("us-central1").list_model_versions(
            name="projects/demo/locations/us-central1/models/1000"
        )
    }
    assert held == {"1": ["blessed", "default"], "2": [], "3": []}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["bless", "nightly", "1", "--alias", "default"], "[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]"),
        (["bless", "nightly", "1", "--alias", "-blessed"], "[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]"),
        (["bless", "nightly", "latest"], "VERSION: 'latest'; accepted: a version id"),
        (["versions", "no-such-model"], "'no-such-model' names no Model"),
        (["versions", "projects/demo/x"], "accepted: projects/P/locations/L/models/ID"),
    ],
)
def test_hostile_aliases_versions_and_models_are_refused(
    emu: None, args: list[str], says: str
) -> None:
    models.promote_if_better(
        "demo", "us-central1", "nightly", "gs://bkt/1/", IMAGE, 0.5, models.Gate()
    )
    refused = cli(*args, *TARGET)
    assert refused.exit_code == 2 and says in refused.stderr, refused.stderr
