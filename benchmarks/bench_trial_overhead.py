"""What the emulator adds per trial: a 40-trial sweep against the same 40 processes started bare.

Run: ``python3 benchmarks/bench_trial_overhead.py [--trials 40] [--parallel 4] [--repeats 3]
[--image URI]``.

The trainer only reports its metric with cloudml-hypertune (``hypertune``), so the time is
the emulator's and Python's start-up. Its image is a Vertex prebuilt training image
(default ``sklearn-cpu.1-0``), whose stand-in holds hypertune, as the real one does: the
stand-in is built once, before any figure, in ``--stand-ins`` (default
``~/.cache/trainpool/bench-stand-ins``, kept across runs). The server runs without a
container engine (``TRAINPOOL_CONTAINERS=off``): this measures the process runner. Each
repeat runs, in alternating order (so that a busy machine hurts both alike):

- **bare**: the 40 trainer processes, ``--parallel`` at a time, on the stand-in's own Python,
  started by this script with their metric file and trial id set by hand (the floor:
  nothing but the processes);
- **sweep**: (after one untimed sweep of 8 trials, which makes the server import what
  sweeps need) a HyperparameterTuningJob of 40 trials, ``--parallel`` in parallel, on an
  emulator server (``python -m trainpool.cli emulator``, a process of its own); its time is
  from Create to the job's recorded end (``end_time - create_time``).

Prints the medians of both, the ratio sweep/bare (goal <= 1.3, issue 42) and the emulator's time per
trial ``(sweep - bare) / trials * parallel``. To measure another checkout (the "before"),
run this same script with ``PYTHONPATH`` pointing at that checkout: the emulator server is
started with the interpreter's ``PYTHONPATH``, so it runs that checkout's code.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from trainpool.home import Home

PARENT = "projects/bench/locations/us-central1"
IMAGE = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"
FINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}
TRAINER = """
import argparse
import hypertune
parser = argparse.ArgumentParser()
parser.add_argument("--x", type=float)
args, _ = parser.parse_known_args()
hypertune.HyperTune().report_hyperparameter_tuning_metric(
    hyperparameter_metric_tag="score", metric_value=-(args.x - 0.3) ** 2, global_step=1
)
"""


def link(root: Path, stand_ins: Path) -> None:
    """``root``'s stand-ins (``Home.stand_ins``) are those in ``stand_ins``, kept across runs."""
    root.mkdir(parents=True, exist_ok=True)
    stand_ins.mkdir(parents=True, exist_ok=True)
    Home(root).stand_ins.symlink_to(stand_ins, target_is_directory=True)


def start_server(root: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainpool.cli", "emulator", "--root", str(root)],
        cwd=root,  # not this checkout: ``-m`` puts the working directory first on the path
        # the process runner's overhead: trials of "local/none" imitate it with this machine's
        # Python, where an engine would refuse an image it does not have
        env={**os.environ, "TRAINPOOL_CONTAINERS": "off"},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    print(f"server: {line.strip()}")
    return proc, line.split()[5]


BARE = """
import json, os, subprocess, sys, time
from concurrent import futures
trainer, out, trials, parallel, python = json.loads(sys.argv[1])
base = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}

def one(n):
    env = dict(base, HOME=out, CLOUD_ML_TRIAL_ID=str(n))
    env["CLOUD_ML_HP_METRIC_FILE"] = os.path.join(out, f"trial-{n}", "metrics")
    argv = [python, trainer, f"--x={n / trials!r}"]
    done = subprocess.run(
        argv, env=env, cwd=out, stdout=subprocess.DEVNULL, start_new_session=True
    )
    return done.returncode

began = time.perf_counter()
with futures.ThreadPoolExecutor(parallel) as pool:
    codes = list(pool.map(one, range(1, trials + 1)))
print(json.dumps([time.perf_counter() - began, codes]))
"""


def bare(trainer: Path, out: Path, trials: int, parallel: int, python: Path) -> float:
    """``trials`` trainer processes, ``parallel`` at a time, started by a small stdlib-only
    process as the emulator starts replicas (a minimal environment, each in a session of its
    own, which also gives each its own share of the CPUs where the kernel groups by session);
    seconds from the first start to the last end."""
    out.mkdir(parents=True, exist_ok=True)
    request = json.dumps([str(trainer), str(out), trials, parallel, str(python)])
    result = subprocess.run(
        [sys.executable, "-I", "-c", BARE, request], capture_output=True, text=True, check=True
    )
    wall, codes = json.loads(result.stdout)
    if any(codes):
        raise RuntimeError(f"bare trainer exit codes {codes}")
    return float(wall)


def cpu_seconds(server: int) -> dict[str, float]:
    """CPU seconds (user + system) the emulator has spent: its server process, and its
    children's own (the replica guard's; not the replicas', which the guard reaps)."""
    tick = os.sysconf("SC_CLK_TCK")

    def own(pid: str, field: int | None = None) -> float:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return sum(int(fields[i]) for i in ((field,) if field else (11, 12))) / tick

    children: list[str] = []
    for task in Path(f"/proc/{server}/task").iterdir():
        children += (task / "children").read_text().split()
    return {
        "server": own(str(server)),
        "system": own(str(server), 12),
        "children": sum(own(pid) for pid in children),
    }


def sweep(client: Any, trainer: Path, trials: int, parallel: int, image: str) -> float:
    """Seconds from Create to the sweep's recorded end."""
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": image, "command": ["python3", str(trainer)]},
    }
    job = {
        "display_name": "overhead",
        "max_trial_count": trials,
        "parallel_trial_count": parallel,
        "study_spec": {
            "metrics": [{"metric_id": "score", "goal": "MAXIMIZE"}],
            "parameters": [
                {"parameter_id": "x", "double_value_spec": {"min_value": 0.01, "max_value": 1.0}}
            ],
            "algorithm": "RANDOM_SEARCH",
        },
        "trial_job_spec": {"worker_pool_specs": [pool]},
    }
    created = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=job)
    while True:
        done = client.get_hyperparameter_tuning_job(name=created.name)
        if done.state.name in FINAL:
            break
        time.sleep(0.25)
    succeeded = sum(t.state.name == "SUCCEEDED" for t in done.trials)
    if done.state.name != "JOB_STATE_SUCCEEDED" or succeeded != trials:
        raise RuntimeError(f"sweep {done.state.name}, {succeeded} trials: {done.error.message}")
    return (done.end_time - done.create_time).total_seconds()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--image", default=IMAGE)
    parser.add_argument(
        "--stand-ins", type=Path, default=Path.home() / ".cache/trainpool/bench-stand-ins"
    )
    args = parser.parse_args()
    from trainpool.catalog import prebuilt_image
    from trainpool.emulator.stand_ins import virtualenvs
    from trainpool.home import Home
    from trainpool.vertex.clients import job_client

    prebuilt = prebuilt_image(args.image)
    if prebuilt is None:
        raise SystemExit(f"--image: {args.image!r} is not a Vertex prebuilt training image")
    with tempfile.TemporaryDirectory(prefix="bench-trials-") as tmp:
        work = Path(tmp)
        trainer = work / "trainer.py"
        trainer.write_text(TRAINER)
        link(work / "root", args.stand_ins)
        # the stand-in, built once (not timed), and its Python for the bare floor
        python = virtualenvs.ensure(Home(work / "root"), prebuilt, print).python
        server, address = start_server(work / "root")
        os.environ["VERTEX_AI_EMULATOR_HOST"] = address
        client = job_client("us-central1")
        floors: list[float] = []
        sweeps: list[float] = []
        cpu: list[dict[str, float]] = []
        try:
            # not timed: the server's first sweep imports what sweeps need, once per server
            sweep(client, trainer, 2 * args.parallel, args.parallel, args.image)
            for i in range(args.repeats):
                for which in ("sweep", "bare") if i % 2 else ("bare", "sweep"):
                    if which == "bare":
                        floors.append(
                            bare(trainer, work / f"bare{i}", args.trials, args.parallel, python)
                        )
                    else:
                        before = cpu_seconds(server.pid)
                        sweeps.append(
                            sweep(client, trainer, args.trials, args.parallel, args.image)
                        )
                        after = cpu_seconds(server.pid)
                        cpu.append({k: after[k] - before[k] for k in after})
        finally:
            server.terminate()
            server.wait(timeout=60)
    floor, swept = statistics.median(floors), statistics.median(sweeps)
    per_trial_ms = (swept - floor) / args.trials * args.parallel * 1000
    print(
        f"{args.trials} trials reporting one metric (cloudml-hypertune) on {args.image}'s "
        f"stand-in, {args.parallel} at a time, median of {args.repeats} (code: "
        f"{os.environ.get('PYTHONPATH') or 'installed'})"
    )
    print(f"  bare processes  {floor:6.2f} s   runs {[round(x, 2) for x in floors]}")
    print(f"  emulator sweep  {swept:6.2f} s   runs {[round(x, 2) for x in sweeps]}")
    print(
        f"  ratio sweep/bare = {swept / floor:.2f} (goal <= 1.3, issue 42); per-pair "
        f"{[round(s / b, 2) for s, b in zip(sweeps, floors, strict=True)]}"
    )
    print(f"  emulator time per trial = {per_trial_ms:.0f} ms (slot time beyond the bare process)")
    server_ms = statistics.median(c["server"] for c in cpu) / args.trials * 1000
    guard_ms = statistics.median(c["children"] for c in cpu) / args.trials * 1000
    system_ms = statistics.median(c["system"] for c in cpu) / args.trials * 1000
    print(
        f"  emulator CPU per trial = {server_ms + guard_ms:.1f} ms (its server {server_ms:.1f}, "
        f"{system_ms:.1f} of it in the kernel; the replica guard {guard_ms:.1f}; median of the "
        "sweeps): on a busy machine each trial waits for this much CPU"
    )


if __name__ == "__main__":
    main()
