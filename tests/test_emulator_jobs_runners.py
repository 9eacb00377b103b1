"""The replica runner seam: the job engine's rules start, kill and terminate replicas only
through their runner (trainpool.emulator.jobs.runners), so another way to run a replica (a
container) plugs in without touching the rules."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from test_emulator_jobs_replicas import alive, run_replicas

from trainpool.emulator.faults.config import KillFault
from trainpool.emulator.jobs.failure_rules import RetryPolicy
from trainpool.emulator.jobs.processes import Launch, Replica
from trainpool.emulator.jobs.runners import HostProcesses

pytestmark = pytest.mark.timeout(60)

# exits 3 (not a permanent code) on its first start and 0 on the next; writes its pid on every start
ONCE_FAILING = (
    "import os, sys; from pathlib import Path\n"
    "marker = Path(sys.argv[1]); first = not marker.exists(); marker.write_text('x')\n"
    "with open(sys.argv[2], 'a') as f: f.write(f'{os.getpid()}\\n')\n"
    "sys.exit(3 if first else 0)\n"
)
SLEEPS = (
    "import os, sys, time\n"
    "with open(sys.argv[1], 'a') as f: f.write(f'{os.getpid()}\\n')\n"
    "time.sleep(120)\n"
)


class Recording(HostProcesses):
    """Host processes, with every call the engine makes written down."""

    name = "recording host processes"

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.started: list[Replica] = []
        self._lock = threading.Lock()

    def _note(self, what: str, replicas: Sequence[Replica]) -> None:
        with self._lock:
            self.calls.append((what, tuple(r.launch.name for r in replicas)))

    def start(self, launch: Launch) -> Replica:
        replica = super().start(launch)
        self.started.append(replica)
        self._note("start", [replica])
        return replica

    def kill(self, replica: Replica) -> None:
        self._note("kill", [replica])
        super().kill(replica)

    def terminate(self, replicas: Sequence[Replica], grace_s: float | None = None) -> None:
        self._note("terminate", replicas)
        super().terminate(replicas, grace_s)


def launch(tmp_path: Path, name: str, pool: int, code: str, *args: str) -> Launch:
    argv = [sys.executable, "-c", code, *args]
    return Launch(name, pool, argv, dict(os.environ), tmp_path, tmp_path / f"{name}.log")


def pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


def test_restarts_kills_and_the_end_all_go_through_the_runner(tmp_path: Path) -> None:
    runner = Recording()
    chief = launch(tmp_path, "workerpool0-0", 0, SLEEPS, str(tmp_path / "chief.pids"))
    worker = launch(
        tmp_path,
        "workerpool1-0",
        1,
        ONCE_FAILING,
        str(tmp_path / "marker"),
        str(tmp_path / "worker.pids"),
    )
    cancel = threading.Event()
    kill = KillFault(replica="workerpool0-0", after_s=0.5, times=1)

    def started(replicas: list[Replica]) -> None:
        if any(r.launch.name == "workerpool0-0" for r in replicas) and len(runner.started) > 2:
            cancel.set()  # the killed chief was started again: end the run

    outcome = run_replicas(
        [chief, worker],
        cancel=cancel,
        policy=RetryPolicy(worker_restarts=1),
        kill=kill,
        on_started=started,
        runner=runner,
    )
    assert outcome.state == "CANCELLED", (outcome, runner.calls)
    names = [call for call in runner.calls]
    # both start; the worker fails once and is restarted in place; the chief is killed by the
    # fault and restarted in place; the cancel terminates what is left
    assert names[:2] == [("start", ("workerpool0-0",)), ("start", ("workerpool1-0",))]
    assert ("terminate", ("workerpool1-0",)) in names  # the failed worker's restart
    assert ("kill", ("workerpool0-0",)) in names
    assert names.count(("start", ("workerpool1-0",))) == 2
    assert names.count(("start", ("workerpool0-0",))) == 2
    assert names[-1][0] == "terminate"  # the end: close() terminates through the runner
    # every process that ran was one the runner started, and none is left
    started = {r.pgid for r in runner.started}
    ran = pids(tmp_path / "chief.pids") + pids(tmp_path / "worker.pids")
    assert set(ran) <= started
    assert not any(alive(pid) for pid in ran)
