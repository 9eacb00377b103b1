"""The emulator's faults for tests: delays served per call, over real gRPC."""

from __future__ import annotations

import time
from concurrent import futures
from pathlib import Path

import pytest
from fixtures.vertex import PARENT
from google.api_core import exceptions

import trainpool.emulator as emulator
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(60)


def test_a_delay_holds_up_each_call_not_the_whole_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    faults = emulator.Faults(delay_s=1.0, methods=("GetCustomJob",))
    with emulator.start(tmp_path / "root", faults=faults) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")

        def get(n: int) -> None:
            with pytest.raises(exceptions.NotFound):
                client.get_custom_job(name=f"{PARENT}/customJobs/{n}")

        began = time.monotonic()
        with futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(get, range(4)))
        elapsed = time.monotonic() - began
    assert 1.0 <= elapsed < 3.5, f"4 concurrent calls took {elapsed:.1f}s: served one at a time"


def test_a_delayed_create_is_carried_out_after_the_delay_even_if_the_client_gave_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    faults = emulator.Faults(delay_s=1.0, methods=("CreateCustomJob",))
    pool = {
        "machine_spec": {"machine_type": "n1-standard-4"},
        "replica_count": 1,
        "container_spec": {"image_uri": "local/none", "command": ["python3", "-c", "pass"]},
    }
    body = {"display_name": "slow", "job_spec": {"worker_pool_specs": [pool]}}
    with emulator.start(tmp_path / "root", faults=faults) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        with pytest.raises(exceptions.DeadlineExceeded):
            client.create_custom_job(parent=PARENT, custom_job=body, timeout=0.3)
        assert list(client.list_custom_jobs(parent=PARENT)) == []
        time.sleep(1.5)
        assert [j.display_name for j in client.list_custom_jobs(parent=PARENT)] == ["slow"]
