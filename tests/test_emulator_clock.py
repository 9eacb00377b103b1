"""The emulator's clock: real time by default, moved forward on request (never back); the
timestamps the emulator writes and a job's ``scheduling.timeout`` follow it; the
``trainpool.emulator.v1.Clock`` service reads and moves it over gRPC."""

from __future__ import annotations

import sys
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import grpc
import pytest
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT

import trainpool.emulator as emulator
from trainpool import config
from trainpool.emulator.clock import Clock, parse_duration, parse_time
from trainpool.emulator_client import advance_clock, get_time
from trainpool.errors import InputError
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(60)


def test_the_clock_is_real_time_until_advanced_and_never_goes_back() -> None:
    moves: list[float] = []
    clock = Clock(on_change=moves.append)
    heard: list[datetime] = []
    clock.on_advance(heard.append)
    real = datetime.now(timezone.utc)
    assert abs((clock.now() - real).total_seconds()) < 1 and clock.offset_s == 0
    before = clock.monotonic()
    moved = clock.advance(timedelta(days=2))
    assert timedelta(days=2) <= moved - real < timedelta(days=2, seconds=1)
    assert clock.monotonic() - before >= 2 * 86400, "durations include the advance"
    assert moves == [2 * 86400.0] and heard == [moved]
    with pytest.raises(InputError, match="^by: .*the clock never goes back"):
        clock.advance(timedelta(seconds=-1))
    with pytest.raises(InputError, match="^to: .* is before the emulator's time"):
        clock.advance_to(real)
    with pytest.raises(InputError, match="^to: .*accepted: a time with its zone"):
        clock.advance_to(datetime(2099, 1, 1))
    target = clock.now() + timedelta(hours=1)
    assert clock.advance_to(target) >= target
    assert clock.reach(real) >= target, "reach never moves back"
    stamped = clock.now()
    assert abs(clock.real_timestamp(stamped) - time.time()) < 1


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1d", 86400), ("90m", 5400), ("1d12h", 129600), ("3600s", 3600), ("1w", 604800)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


def test_bad_durations_and_times_say_what_is_accepted() -> None:
    with pytest.raises(ValueError, match="'1 day' is not a duration; accepted: a number and"):
        parse_duration("1 day")
    assert parse_time("2026-12-01T04:00:00+01:00") == datetime(2026, 12, 1, 3, tzinfo=timezone.utc)
    with pytest.raises(ValueError, match="has no time zone; accepted: RFC 3339"):
        parse_time("2026-12-01T03:00:00")


def sleeper(seconds: float, timeout: str = "") -> dict[str, Any]:
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {
            "image_uri": "local/none",
            "command": [sys.executable, "-c", f"import time; time.sleep({seconds})"],
        },
    }
    spec: dict[str, Any] = {"worker_pool_specs": [pool]}
    if timeout:
        spec["scheduling"] = {"timeout": timeout}
    return {"display_name": "sleeper", "job_spec": spec}


def test_the_clock_service_reads_and_moves_the_clock_and_refuses_going_back(
    emu: emulator.Emulator,
) -> None:
    first = get_time(emu.address)
    assert first.offset == timedelta(0)
    done = advance_clock(emu.address, by=timedelta(days=7))
    assert timedelta(days=7) <= done.offset < timedelta(days=7, seconds=1)
    assert done.now >= first.now + timedelta(days=7)
    assert list(done.events) == [] and done.idle
    with pytest.raises(grpc.RpcError) as caught:
        advance_clock(emu.address, to=first.now)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "is before the emulator's time" in str(caught.value.details())
    with pytest.raises(grpc.RpcError) as caught:
        advance_clock(emu.address, by=timedelta(seconds=-5))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_timestamps_follow_the_clock_and_its_offset_outlives_a_restart(
    emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    advance_clock(emu.address, by=timedelta(days=30))
    client = job_client("us-central1")
    created = client.create_custom_job(parent=PARENT, custom_job=sleeper(0))
    done = wait_job(client.get_custom_job, created.name, 20)
    later = datetime.now(timezone.utc) + timedelta(days=30)
    for stamp in (done.create_time, done.start_time, done.end_time, done.update_time):
        assert later - timedelta(seconds=30) < stamp <= later + timedelta(seconds=1)
    root, offset = emu.root, emu.clock.offset_s
    emu.close()
    with emulator.start(root) as again:
        monkeypatch.setenv(config.EMULATOR_ENV, again.address)
        assert again.clock.offset_s == offset
        assert get_time(again.address).offset == timedelta(seconds=offset)


def test_a_job_times_out_when_the_clock_passes_its_timeout(emu: emulator.Emulator) -> None:
    """scheduling.timeout: "The maximum job running time." Measured on the emulator's
    clock, an advance past it ends the job: FAILED, code 4 (DEADLINE_EXCEEDED)."""
    client = job_client("us-central1")
    created = client.create_custom_job(parent=PARENT, custom_job=sleeper(60, "3600s"))
    deadline = time.monotonic() + 20
    while client.get_custom_job(name=created.name).state.name != "JOB_STATE_RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    began = time.monotonic()
    advance_clock(emu.address, by=timedelta(hours=2))
    done = wait_job(client.get_custom_job, created.name, 20)
    assert time.monotonic() - began < 15, "it did not wait for real time"
    assert done.state.name == "JOB_STATE_FAILED"
    assert (done.error.code, done.error.message) == (4, "The job exceeded its timeout of 3600s.")
