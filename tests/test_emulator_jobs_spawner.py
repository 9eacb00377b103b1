"""Replicas started through the one guard process: statuses as a container reports them,
stops that land at once, and nothing left running or unreported when the guard dies."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from trainpool.emulator.jobs import processes, spawner
from trainpool.emulator.jobs.processes import Launch

pytestmark = pytest.mark.timeout(60)


def launch(tmp_path: Path, *argv: str) -> Launch:
    env = {"PATH": os.defpath}
    return Launch("workerpool0-0", 0, list(argv), env, tmp_path, tmp_path / "replica.log")


def test_exit_statuses_are_those_a_container_reports(tmp_path: Path) -> None:
    assert spawner.start(launch(tmp_path, "sh", "-c", "exit 3")).wait(10) == 3
    assert spawner.start(launch(tmp_path, "sh", "-c", "kill -KILL $$")).wait(10) == 137
    assert spawner.start(launch(tmp_path, "sh", "-c", "kill -TERM $$")).wait(10) == 143


def test_output_goes_to_the_log_and_input_is_empty(tmp_path: Path) -> None:
    replica = spawner.start(launch(tmp_path, "sh", "-c", "echo out; echo err >&2; cat"))
    assert replica.wait(10) == 0
    assert (tmp_path / "replica.log").read_text().split() == ["out", "err"]
    assert replica.identity is not None and replica.identity.pid == replica.pid


def test_an_interpreter_that_does_not_exist_exits_127_saying_so(tmp_path: Path) -> None:
    script = tmp_path / "script"
    script.write_text("#!/no/such/interpreter\n")
    script.chmod(0o755)
    assert spawner.start(launch(tmp_path, str(script))).wait(10) == 127
    assert "cannot start" in (tmp_path / "replica.log").read_text()


def test_a_stop_sent_right_after_the_start_lands(tmp_path: Path) -> None:
    # SIGTERM sent before the child has left the guard's dispositions behind (the guard
    # ignores SIGTERM) must still end it, without waiting for the SIGKILL.
    for _ in range(5):
        replica = spawner.start(launch(tmp_path, "sleep", "30"))
        began = time.monotonic()
        processes.terminate([replica], grace_s=5)
        assert time.monotonic() - began < 4.5 and replica.exit_status() == 143  # before SIGKILL


def test_exits_are_reported_to_listeners(tmp_path: Path) -> None:
    seen: list[int | None] = []
    replica = spawner.start(launch(tmp_path, "sh", "-c", "exit 4"))
    replica.on_exit(lambda r: seen.append(r.exit_status()))
    replica.wait(10)
    replica.on_exit(lambda r: seen.append(r.exit_status()))  # after the end: at once
    assert seen == [4, 4]


def test_when_the_guard_dies_its_replicas_are_killed_and_reported(tmp_path: Path) -> None:
    replica = spawner.start(launch(tmp_path, "sleep", "30"))
    guard = spawner.guard_pid()
    assert guard is not None
    os.kill(guard, signal.SIGKILL)
    assert replica.wait(10) == 128 + signal.SIGKILL
    deadline = time.monotonic() + 5
    while processes.group_alive(replica.pgid):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    after = spawner.start(launch(tmp_path, sys.executable, "-c", "pass"))  # a new guard
    assert after.wait(10) == 0 and spawner.guard_pid() != guard


def test_a_replica_gets_the_umask_of_the_process_that_started_it(tmp_path: Path) -> None:
    # The guard may start before the emulator restricts its umask (private_root); the
    # replica's log and files must still follow the umask in force when it is started.
    (tmp_path / "first").mkdir()
    assert spawner.start(launch(tmp_path / "first", "true")).wait(10) == 0  # the guard runs
    before = os.umask(0o077)
    try:
        replica = spawner.start(launch(tmp_path, "sh", "-c", "echo x > made"))
    finally:
        os.umask(before)
    assert replica.wait(10) == 0
    assert (tmp_path / "made").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "replica.log").stat().st_mode & 0o777 == 0o600


def test_output_becomes_entries_a_line_each_long_lines_cut_the_rest_kept() -> None:
    # the one rule for the guard's pumps and the container runner's follower
    from trainpool.emulator.jobs import replica_guard

    cap = replica_guard.MAX_LINE
    data = b"a" * (2 * cap + 5) + b"\nshort\n" + b"tail"
    out, rest = replica_guard.entry_lines("e", data)
    entries = [json.loads(line) for line in out.decode().splitlines()]
    assert [len(e["m"]) for e in entries] == [cap, cap, 5, 5]
    assert {e["s"] for e in entries} == {"e"} and entries[-1]["m"] == "short"
    assert rest == b"tail"
    out, rest = replica_guard.entry_lines("o", rest, final=True)
    assert [json.loads(line)["m"] for line in out.decode().splitlines()] == ["tail"]
    assert rest == b""
    assert replica_guard.entry_lines("o", b"no newline yet") == (b"", b"no newline yet")
