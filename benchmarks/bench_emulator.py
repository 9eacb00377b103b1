"""Emulator figures: overhead vs a bare script, its memory, sweep parallelism, API latency.

Run: ``python3 benchmarks/bench_emulator.py [--repeats 4] [--clients 20]``. Prints:
1. the 3-replica PyTorch DDP example run by the emulator vs the same 3 processes
   started by a bare script with the environment set by hand (target ratio <= 1.10;
   the order alternates between repeats so that a busy machine hurts both alike),
   and the emulator server's own peak memory (VmHWM of ``trainpool emulator``);
2. a sweep of 8 trials, 2 in parallel: wall time vs the sum of trial times;
3. p50 / p99 of CreateCustomJob and GetCustomJob with N concurrent clients.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "pytorch_ddp"
PARENT = "projects/bench/locations/us-central1"
FINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}
TRAINER_ARGS = ["--epochs=3"]


def ddp_spec(base: str) -> dict[str, Any]:
    package = {
        "executor_image_uri": "pytorch",
        "package_uris": [str(EXAMPLE)],
        "python_module": "trainer.task",
        "args": TRAINER_ARGS,
    }
    pools = [
        {
            "replica_count": n,
            "machine_spec": {"machine_type": "n1-standard-4"},
            "python_package_spec": package,
        }
        for n in (1, 2)
    ]
    return {"worker_pool_specs": pools, "base_output_directory": {"output_uri_prefix": base}}


def start_server(root: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainpool.cli", "emulator", "--root", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().split()[5]


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def wait_job(client: Any, name: str, poll_s: float = 0.05) -> Any:
    while True:
        job = client.get_custom_job(name=name)
        if job.state.name in FINAL:
            return job
        time.sleep(poll_s)


def emulator_run(client: Any, base: str) -> tuple[float, float]:
    """Seconds from Create to the job's end: as the job records it, and as a client polling
    every 0.25 s sees it (faster polling puts the client on the CPUs the replicas use)."""
    began = time.perf_counter()
    job = client.create_custom_job(
        parent=PARENT, custom_job={"display_name": "ddp", "job_spec": ddp_spec(base)}
    )
    done = wait_job(client, job.name, poll_s=0.25)
    seen = time.perf_counter() - began
    if done.state.name != "JOB_STATE_SUCCEEDED":
        raise RuntimeError(done.error.message)
    recorded = (done.end_time - done.create_time).total_seconds()
    return recorded, seen


def bare_run(root: Path, base: str) -> float:
    """The same three processes, environment by hand (cluster_env), no emulator."""
    from trainpool.cluster_env import build_env, local_hosts
    from trainpool.spec import to_rest

    spec = to_rest(ddp_spec(base))
    hosts = local_hosts(spec)
    began = time.perf_counter()
    procs = []
    for pool, index in ((0, 0), (1, 0), (1, 1)):
        env = dict(os.environ)
        env.update(
            build_env(
                spec, pool, index, hosts=hosts, job_id="bare", project="bench", region="us-central1"
            )
        )
        env.update(TRAINPOOL_GCS_ROOT=str(root / "gcs"), PYTHONPATH=str(EXAMPLE))
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "trainer.task", *TRAINER_ARGS],
                env=env,
                cwd=root,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
            )
        )
    codes = [p.wait() for p in procs]
    wall = time.perf_counter() - began
    if any(codes):
        raise RuntimeError(f"bare run exit codes {codes}")
    return wall


def overhead(client: Any, root: Path, repeats: int, server_pid: int) -> None:
    emu: list[float] = []
    seen: list[float] = []
    bare: list[float] = []
    server_cpu = 0.0
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for i in range(repeats):
        for which in ("emu", "bare") if i % 2 else ("bare", "emu"):
            if which == "bare":
                bare.append(bare_run(root, f"gs://bench/bare{i}"))
                continue
            before = cpu_s(server_pid)
            recorded, observed = emulator_run(client, f"gs://bench/emu{i}")
            emu.append(recorded)
            seen.append(observed)
            server_cpu += cpu_s(server_pid) - before
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    replica_cpu = (
        children.ru_utime + children.ru_stime - children_before.ru_utime - children_before.ru_stime
    ) / repeats
    ratio = statistics.median(emu) / statistics.median(bare)
    print(
        "1. overhead: 3-replica PyTorch DDP example (trainer.task --epochs=3), median of",
        repeats,
        "(emulator: Create to the job's recorded end, QUEUED and PENDING included)",
    )
    print(f"   bare script  {statistics.median(bare):7.2f} s   runs {[round(x, 2) for x in bare]}")
    print(f"   emulator     {statistics.median(emu):7.2f} s   runs {[round(x, 2) for x in emu]}")
    print(
        f"   (as a client polling every 0.25 s saw it: {statistics.median(seen):.2f} s, "
        f"ratio {statistics.median(seen) / statistics.median(bare):.3f})"
    )
    print(
        f"   ratio emulator/bare = {ratio:.3f} (target <= 1.10); per-pair ratios "
        f"{[round(e / b, 2) for e, b in zip(emu, bare, strict=True)]}"
    )
    per_job = server_cpu / repeats
    print(
        f"   CPU: 3 bare replicas {replica_cpu:.2f} s per run; emulator server "
        f"{per_job:.2f} s per job (CPU overhead {per_job / replica_cpu:.1%})"
    )


SWEEP_TRAINER = """
import argparse, time, hypertune
parser = argparse.ArgumentParser()
parser.add_argument("--x", type=int)
args = parser.parse_args()
time.sleep(1.0)
hypertune.HyperTune().report_hyperparameter_tuning_metric("score", args.x)
"""


def sweep(client: Any, root: Path) -> None:
    trainer = root / "sweep_trainer.py"
    trainer.write_text(SWEEP_TRAINER)
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": "local/none", "command": [sys.executable, str(trainer)]},
    }
    spec = {
        "display_name": "bench-sweep",
        "max_trial_count": 8,
        "parallel_trial_count": 2,
        "study_spec": {
            "metrics": [{"metric_id": "score", "goal": "MAXIMIZE"}],
            "parameters": [
                {"parameter_id": "x", "integer_value_spec": {"min_value": 1, "max_value": 8}}
            ],
            "algorithm": "GRID_SEARCH",
        },
        "trial_job_spec": {"worker_pool_specs": [pool]},
    }
    began = time.perf_counter()
    job = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=spec)
    while client.get_hyperparameter_tuning_job(name=job.name).state.name not in FINAL:
        time.sleep(0.05)
    wall = time.perf_counter() - began
    done = client.get_hyperparameter_tuning_job(name=job.name)
    trial_s = [(t.end_time - t.start_time).total_seconds() for t in done.trials]
    print("2. sweep: 8 trials (1 s sleep + python start), 2 in parallel,", done.state.name)
    print(
        f"   wall {wall:.2f} s; sum of trial times {sum(trial_s):.2f} s; "
        f"wall/sum = {wall / sum(trial_s):.3f} (ideal 0.5)"
    )


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def latency(address: str, clients: int, creates: int, gets: int) -> None:
    from trainpool.vertex.clients import job_client

    os.environ["VERTEX_AI_EMULATOR_HOST"] = address
    job = {
        "display_name": "noop",
        "job_spec": {
            "worker_pool_specs": [
                {
                    "replica_count": 1,
                    "machine_spec": {"machine_type": "n1-standard-4"},
                    "container_spec": {"image_uri": "local/none", "command": ["true"]},
                }
            ]
        },
    }
    times: dict[str, list[float]] = {"create": [], "get": []}
    lock = threading.Lock()
    barrier = threading.Barrier(clients)

    def one_client() -> None:
        client = job_client("us-central1")
        barrier.wait()
        mine: dict[str, list[float]] = {"create": [], "get": []}
        names = []
        for _ in range(creates):
            began = time.perf_counter()
            names.append(client.create_custom_job(parent=PARENT, custom_job=job).name)
            mine["create"].append(time.perf_counter() - began)
        for i in range(gets):
            began = time.perf_counter()
            client.get_custom_job(name=names[i % len(names)])
            mine["get"].append(time.perf_counter() - began)
        with lock:
            for key, values in mine.items():
                times[key].extend(values)

    threads = [threading.Thread(target=one_client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(
        f"3. API latency, {clients} concurrent clients "
        f"({creates} Create + {gets} Get each, every Create starts a job)"
    )
    for key, values in times.items():
        print(
            f"   {key:<6} n={len(values):4d}  p50 {percentile(values, 0.5) * 1000:7.1f} ms  "
            f"p99 {percentile(values, 0.99) * 1000:7.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--creates", type=int, default=5)
    parser.add_argument("--gets", type=int, default=50)
    args = parser.parse_args()
    from trainpool.vertex.clients import job_client

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        proc, address = start_server(root / "emu")
        try:
            os.environ["VERTEX_AI_EMULATOR_HOST"] = address
            client = job_client("us-central1")
            overhead(client, root, args.repeats, proc.pid)
            print(f"   emulator server peak memory (VmHWM) {peak_rss_mib(proc.pid):.1f} MiB")
            sweep(client, root)
            latency(address, args.clients, args.creates, args.gets)
            print(
                f"   emulator server peak memory after all (VmHWM) {peak_rss_mib(proc.pid):.1f} MiB"
            )
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
