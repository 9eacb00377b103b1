"""The main job with containers against the same trials as bare containers.

Run: ``python3 benchmarks/bench_main_job_containers.py [--repeats 3]`` (needs a container
engine, ``scripts/engine``; the first run builds the trainer image and the stand-in of its
base, ``pytorch-gpu.2-4``, once, before any figure is taken).

Each repeat, in alternating order (so that a busy machine hurts both alike):

- **job**: the main job as the README's first command runs it (``trainpool run
  pipelines/distributed_training.yaml --local --param source_dir=examples/pytorch_ddp``) on
  a fresh store, with the emulator's container engine: the trainer image is built on the
  engine (found there after the first run) and every replica of the 4-trial sweep is a
  container. Timed whole (the command's wall time: emulator start, pipeline, planning, the
  sweep) and its sweep alone (the HyperparameterTuningJob's ``end_time - create_time``).
- **bare**: the same trials (the same image, the same arguments the sweep gave each trial,
  2 trials at a time, 3 replicas each) as ``docker run --rm --network host`` containers with
  the ``CLUSTER_SPEC`` a replica needs and a folder for the model, started and waited for
  by this script: the floor a container engine gives, with no emulator.

Prints the medians and the ratios of the sweep and of the whole job to the bare trials
(goal: the main job at most 1.15x).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainpool.emulator.records.database import Database  # noqa: E402
from trainpool.emulator.records.kinds import TUNING_JOBS  # noqa: E402
from trainpool.emulator.records.resources import Records  # noqa: E402

PARENT = "projects/local-project/locations/us-central1"
COMMAND = [
    "trainpool",
    "run",
    "pipelines/distributed_training.yaml",
    "--local",
    "--param",
    "source_dir=examples/pytorch_ddp",
]


@dataclass(frozen=True)
class Plan:
    """What the bare trials repeat of the sweep."""

    image: str
    args: list[str]
    trials: list[list[str]]
    parallel: int
    replicas: list[int]


def job(root: Path) -> tuple[float, float, Plan]:
    """The main job on a fresh store ``root``: its wall seconds, its sweep's seconds, and
    what the bare trials need (image, arguments per trial, parallelism, replicas)."""
    started = time.perf_counter()
    done = subprocess.run(
        [*COMMAND, "--root", str(root)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the main job failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    records = Records(Database(root / "emulator.sqlite"))
    (sweep,), _ = records.page(TUNING_JOBS, PARENT)
    seconds = (sweep.end_time - sweep.create_time).total_seconds()
    pools = sweep.trial_job_spec.worker_pool_specs
    image = pools[0].container_spec.image_uri
    log = (root / "jobs" / sweep.name.rsplit("/", 1)[1] / "trial-1" / "job.log").read_text()
    if "each replica is a container of" not in log:
        raise SystemExit(f"the sweep's replicas were not containers:\n{log[-2000:]}")
    trials = [[f"--{p.parameter_id}={p.value}" for p in trial.parameters] for trial in sweep.trials]
    plan = Plan(
        image=image,
        args=list(pools[0].container_spec.args),
        trials=trials,
        parallel=sweep.parallel_trial_count,
        replicas=[p.replica_count for p in pools],
    )
    return wall, seconds, plan


def _ports(count: int) -> list[int]:
    found = []
    for _ in range(count):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            found.append(probe.getsockname()[1])
    return found


def bare_trial(plan: Plan, args: list[str], out: Path) -> None:
    """One trial: its replicas as bare containers on the host network, waited for."""
    replicas = [n for n in plan.replicas if n]
    ports = iter(_ports(sum(replicas)))
    cluster = {
        f"workerpool{pool}": [f"127.0.0.1:{next(ports)}" for _ in range(count)]
        for pool, count in enumerate(replicas)
    }
    started = []
    for pool, hosts in cluster.items():
        for index in range(len(hosts)):
            spec = {"cluster": cluster, "task": {"type": pool, "index": index}}
            started.append(
                subprocess.Popen(
                    [
                        "docker",
                        "run",
                        "--rm",
                        "--network",
                        "host",
                        "-v",
                        f"{out}:/out",
                        "-e",
                        f"CLUSTER_SPEC={json.dumps(spec)}",
                        "-e",
                        "AIP_MODEL_DIR=/out/model/",
                        "-e",
                        "AIP_CHECKPOINT_DIR=/out/checkpoints/",
                        plan.image.split("@")[0],
                        *plan.args,
                        *args,
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
    codes = [p.wait() for p in started]
    if any(codes):
        raise SystemExit(f"a bare replica failed: exit codes {codes}")


def bare(plan: Plan) -> float:
    """The sweep's trials as bare containers, ``parallel`` at a time; wall seconds."""
    with tempfile.TemporaryDirectory(prefix="bench-bare-") as tmp:
        started = time.perf_counter()
        with ThreadPoolExecutor(plan.parallel) as pool:
            running = []
            for n, args in enumerate(plan.trials):
                out = Path(tmp) / str(n)
                out.mkdir()
                os.chmod(out, 0o777)
                running.append(pool.submit(bare_trial, plan, args, out))
            for each in running:
                each.result()  # a failed trial fails the benchmark
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    walls: list[float] = []
    sweeps: list[float] = []
    floors: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-main-job-") as tmp:
        print("warm-up: the main job once (the trainer image and its base built)", flush=True)
        _, _, plan = job(Path(tmp) / "warm")
        for n in range(repeats):
            order = ("job", "bare") if n % 2 == 0 else ("bare", "job")
            for which in order:
                if which == "job":
                    wall, seconds, plan = job(Path(tmp) / f"run-{n}")
                    walls.append(wall)
                    sweeps.append(seconds)
                else:
                    floors.append(bare(plan))
            print(
                f"repeat {n + 1}: job {walls[-1]:.1f} s (sweep {sweeps[-1]:.1f} s), "
                f"bare trials {floors[-1]:.1f} s",
                flush=True,
            )
    wall, sweep, floor = (statistics.median(v) for v in (walls, sweeps, floors))
    print()
    print(f"trials: {len(plan.trials)}, {plan.parallel} at a time, replicas {plan.replicas}")
    print(f"main job, whole (median):       {wall:7.1f} s   {wall / floor:.2f}x the bare trials")
    print(f"main job, its sweep (median):   {sweep:7.1f} s   {sweep / floor:.2f}x the bare trials")
    print(f"the same trials, bare (median): {floor:7.1f} s")


if __name__ == "__main__":
    main()
