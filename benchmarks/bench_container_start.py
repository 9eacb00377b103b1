"""What the emulator adds to a replica that is a container: a 1-replica CustomJob against a bare
``docker run`` of the same image and command.

Run: ``python3 benchmarks/bench_container_start.py [--repeats 10]`` (needs a container engine,
``scripts/engine``, and makes the offline ``python:3.11-slim`` stand-in once).

Each repeat, in alternating order (so that a busy machine hurts both alike):

- **bare**: ``docker run --rm --network host IMAGE python3 -c pass``, timed around the command;
- **job**: a CustomJob of one replica of IMAGE with ``command: [python3, -c, pass]`` on an
  emulator in this process, from Create to the job's recorded end (``end_time -
  create_time``: the job's planning, the container's making, start, run, wait and removal,
  and the emulator's records).

Prints both medians and the emulator's addition (goal: at most 0.3 s).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import trainpool.emulator as emulator  # noqa: E402
from trainpool.emulator.jobs import containers  # noqa: E402
from trainpool.emulator.stand_ins import debian_bases  # noqa: E402
from trainpool.vertex.clients import job_client  # noqa: E402

PARENT = "projects/bench/locations/us-central1"
FINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}
COMMAND = ["python3", "-c", "pass"]


def bare(image: str) -> float:
    started = time.perf_counter()
    subprocess.run(["docker", "run", "--rm", "--network", "host", image, *COMMAND], check=True)
    return time.perf_counter() - started


def job(client: object, image: str) -> float:
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": image, "command": COMMAND},
    }
    made = client.create_custom_job(  # type: ignore[attr-defined]
        parent=PARENT,
        custom_job={"display_name": "bench", "job_spec": {"worker_pool_specs": [pool]}},
    )
    while True:
        got = client.get_custom_job(name=made.name)  # type: ignore[attr-defined]
        if got.state.name in FINAL:
            break
        time.sleep(0.01)
    assert got.state.name == "JOB_STATE_SUCCEEDED", got.error
    return (got.end_time - got.create_time).total_seconds()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    engine, why = containers.connect()
    if engine is None:
        sys.exit(f"no container engine: {why}")
    debian_bases.ensure(engine.client, "python:3.11-slim")
    image = debian_bases.stand_in_name("python:3.11-slim")
    with tempfile.TemporaryDirectory() as tmp, emulator.start(Path(tmp) / "root") as emu:
        os.environ["VERTEX_AI_EMULATOR_HOST"] = emu.address
        client = job_client("us-central1")
        job(client, image)  # warm: the first job's imports and records
        bare(image)
        times: dict[str, list[float]] = {"bare": [], "job": []}
        for repeat in range(args.repeats):
            order = ("bare", "job") if repeat % 2 == 0 else ("job", "bare")
            for what in order:
                times[what].append(bare(image) if what == "bare" else job(client, image))
    b, j = statistics.median(times["bare"]), statistics.median(times["job"])
    print(f"engine: {engine.describe}")
    print(f"bare docker run:  median {b:.3f} s  ({', '.join(f'{t:.2f}' for t in times['bare'])})")
    print(f"emulator's job:   median {j:.3f} s  ({', '.join(f'{t:.2f}' for t in times['job'])})")
    print(f"added by the emulator: {j - b:+.3f} s (goal <= 0.3 s); ratio {j / b:.2f}x")


if __name__ == "__main__":
    main()
