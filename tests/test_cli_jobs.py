"""``trainpool jobs list | describe | logs [--follow] | cancel`` against a running emulator."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.vertex import PARENT
from typer.testing import CliRunner

import trainpool.emulator as emulator
from trainpool.cli import app
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(60)

TALKER = "import sys, time\nfor i in range(3):\n    print('line', i, flush=True); time.sleep({})\n"


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Path]]:
    with emulator.start(tmp_path) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "demo")
        yield job_client("us-central1"), tmp_path


def create(client: Any, pause: float, workers: int = 0, name: str = "talker") -> Any:
    pool = {
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {
            "image_uri": "local/none",
            "command": [sys.executable, "-c", TALKER.format(pause)],
        },
    }
    pools = [{**pool, "replica_count": 1}] + (
        [{**pool, "replica_count": workers}] if workers else []
    )
    return client.create_custom_job(
        parent=PARENT, custom_job={"display_name": name, "job_spec": {"worker_pool_specs": pools}}
    )


def finish(client: Any, name: str) -> None:
    deadline = time.monotonic() + 20
    while client.get_custom_job(name=name).state.name not in {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
    }:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, ["jobs", *args])


def test_list_and_describe(setup: tuple[Any, Path]) -> None:
    client, _ = setup
    first = create(client, 0, name="first")
    second = create(client, 0, name="second")
    finish(client, first.name)
    finish(client, second.name)
    result = invoke("list")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["ID", "KIND", "STATE", "CREATED", "DISPLAY", "NAME"]
    assert [line.split()[:3] + line.split()[-1:] for line in lines[1:]] == [
        ["1000", "custom", "JOB_STATE_SUCCEEDED", "first"],
        ["1001", "custom", "JOB_STATE_SUCCEEDED", "second"],
    ]
    described = invoke("describe", "1001")
    assert described.exit_code == 0, described.output
    body = json.loads(described.output)
    assert (body["name"], body["displayName"], body["state"]) == (
        second.name,
        "second",
        "JOB_STATE_SUCCEEDED",
    )


def test_logs_prefix_every_replica(setup: tuple[Any, Path]) -> None:
    client, root = setup
    job = create(client, 0, workers=1)
    finish(client, job.name)
    result = invoke("logs", job.name, "--root", str(root))
    assert result.exit_code == 0, result.output
    replica_lines = [line for line in result.output.splitlines() if "[job]" not in line]
    assert replica_lines == [
        "[workerpool0-0] line 0",
        "[workerpool0-0] line 1",
        "[workerpool0-0] line 2",
        "[workerpool1-0] line 0",
        "[workerpool1-0] line 1",
        "[workerpool1-0] line 2",
    ]
    assert "[job]" in result.output.splitlines()[0]


def test_logs_follow_until_the_job_ends(setup: tuple[Any, Path]) -> None:
    client, root = setup
    job = create(client, 0.4)
    started = time.monotonic()
    result = invoke("logs", "1000", "--follow", "--root", str(root))
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started >= 0.8
    assert client.get_custom_job(name=job.name).state.name == "JOB_STATE_SUCCEEDED"
    lines = [line for line in result.output.splitlines() if line.startswith("[workerpool")]
    assert lines == ["[workerpool0-0] line 0", "[workerpool0-0] line 1", "[workerpool0-0] line 2"]


def test_cancel(setup: tuple[Any, Path]) -> None:
    client, _ = setup
    job = create(client, 30)
    result = invoke("cancel", "1000")
    assert (result.exit_code, result.output) == (0, f"cancel requested: {job.name}\n")
    finish(client, job.name)
    assert client.get_custom_job(name=job.name).state.name == "JOB_STATE_CANCELLED"
    again = invoke("cancel", "1000")
    assert again.exit_code == 1
    assert "already in state JOB_STATE_CANCELLED" in again.output


def test_unknown_job_and_bad_names(
    setup: tuple[Any, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = invoke("describe", "4242")
    assert missing.exit_code == 1
    assert "HyperparameterTuningJob projects/demo/locations/us-central1/" in missing.output
    bad = invoke("describe", "projects/demo/models/1")
    assert bad.exit_code == 2
    assert "JOB: 'projects/demo/models/1' is not a job name" in bad.output
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT")
    no_project = invoke("list")
    assert no_project.exit_code == 2
    assert "--project: not given" in no_project.output
