"""API latency against history: Create, Get and List with 20 clients at 100, 1,000, 10,000 jobs.

Run: ``python3 benchmarks/bench_emulator_list.py [--sizes 100 1000 10000] [--clients 20]``.

For each size, a fresh root is seeded with that many finished CustomJobs (through
the emulator's own job engine, a tenth of them labelled like one local run's), the
emulator is started as its own process (``trainpool emulator``, on its Unix socket),
and ``--clients`` threads, each with its own gapic client, call at once:
Create (a job that fails at start, so no process runs), Get, List (default page) and
List filtered by a run label (``labels.trainpool-local-run="r1"``, what a local run
polls) and by state. Prints one table: p50 and p99 in milliseconds per call.
Goal: List p99 under 50 ms at 10,000 stored jobs.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

PARENT = "projects/bench/locations/us-central1"
OPS = ("create", "get", "list", "list-label", "list-state")


def job(display_name: str, labels: dict[str, str]) -> dict[str, Any]:
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {
            "image_uri": "local/none",
            "command": ["/nonexistent/trainer"],
            "args": ["--epochs=3", "--lr=0.1"],
            "env": [{"name": "MODE", "value": "bench"}],
        },
    }
    return {
        "display_name": display_name,
        "labels": labels,
        "job_spec": {"worker_pool_specs": [pool]},
    }


def seed(root: Path, count: int) -> list[str]:
    """``count`` finished CustomJobs in ``root``'s store; their names."""
    from google.cloud.aiplatform_v1.types import custom_job as cj
    from google.cloud.aiplatform_v1.types.job_state import JobState

    from trainpool.emulator.jobs.manager import JobManager
    from trainpool.emulator.records.kinds import CUSTOM_JOBS
    from trainpool.emulator.state import EmulatorState

    state = EmulatorState(root)
    jobs = JobManager(state)
    names = []
    for i in range(count):
        labels = {"trainpool-local-run": "r1" if i % 10 == 0 else f"old{i // 10}", "team": "ml"}
        record = jobs.create(CUSTOM_JOBS, PARENT, cj.CustomJob(job(f"job{i}", labels)))
        jobs.update(record.name, lambda j: setattr(j, "state", JobState.JOB_STATE_SUCCEEDED))
        names.append(record.name)
    state.close()
    return names


def start_server(root: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", "from trainpool.cli import main; main()", "emulator"]
        + ["--root", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().split()[5]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def measure(address: str, names: list[str], clients: int, rounds: int) -> dict[str, list[float]]:
    from trainpool.vertex.clients import job_client

    os.environ["VERTEX_AI_EMULATOR_HOST"] = address
    times: dict[str, list[float]] = {op: [] for op in OPS}
    lock = threading.Lock()
    barrier = threading.Barrier(clients)
    calls = {
        "create": lambda c, r: c.create_custom_job(parent=PARENT, custom_job=job("new", {})),
        "get": lambda c, r: c.get_custom_job(name=r.choice(names)),
        "list": lambda c, r: c.list_custom_jobs(request={"parent": PARENT}),
        "list-label": lambda c, r: c.list_custom_jobs(
            request={"parent": PARENT, "filter": 'labels.trainpool-local-run="r1"'}
        ),
        "list-state": lambda c, r: c.list_custom_jobs(
            request={"parent": PARENT, "filter": "state=JOB_STATE_FAILED"}
        ),
    }

    def one_client(seed_value: int) -> None:
        client = job_client("us-central1")
        rng = random.Random(seed_value)
        client.get_custom_job(name=names[0])  # connect before the clock starts
        barrier.wait()
        mine: dict[str, list[float]] = {op: [] for op in OPS}
        for _ in range(rounds):
            for op in OPS:
                began = time.perf_counter()
                calls[op](client, rng)  # a List returns its first page: one call
                mine[op].append(time.perf_counter() - began)
        with lock:
            for op, values in mine.items():
                times[op].extend(values)

    threads = [threading.Thread(target=one_client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10, help="calls of each kind per client")
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            began = time.monotonic()
            names = seed(Path(tmp) / "root", size)
            seeded = time.monotonic() - began
            proc, address = start_server(Path(tmp) / "root")
            try:
                times = measure(address, names, args.clients, args.rounds)
            finally:
                proc.terminate()
                proc.wait()
        for op in OPS:
            values = times[op]
            rows.append((size, op, len(values), percentile(values, 0.5), percentile(values, 0.99)))
        print(f"seeded {size} jobs in {seeded:.1f}s", file=sys.stderr)
    print(f"{args.clients} concurrent clients, {args.rounds} calls of each kind per client")
    print(f"{'stored jobs':>11}  {'call':<10} {'n':>5} {'p50 ms':>8} {'p99 ms':>8}")
    for size, op, count, p50, p99 in rows:
        print(f"{size:>11}  {op:<10} {count:>5} {p50 * 1000:>8.1f} {p99 * 1000:>8.1f}")


if __name__ == "__main__":
    main()
