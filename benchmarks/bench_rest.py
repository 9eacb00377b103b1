"""The REST door beside gRPC under load, and gcloud's time against the emulator.

Run: ``python3 benchmarks/bench_rest.py [--clients 20] [--jobs 20] [--gcloud 5]``.

One emulator server (``trainpool emulator``, a process of its own). Then, in turn, gRPC and
REST: ``--clients`` client processes with the official ``JobServiceClient`` (its gRPC
transport on the emulator's socket, or its REST transport on the REST door, with the doors'
secret as the token), started and ready before the clock starts, each creating ``--jobs``
CustomJobs (one replica running ``true``) with a GetCustomJob and a ListCustomJobs (its own
label, a page of 10) after each Create. Prints p50 / p99 of Create, Get and List for each
transport, side by side, and how long each took. The two runs share the machine, so they
are run one after the other, gRPC first, with the same load: each in a project of its own
(its Lists search as many stored jobs as the other's), and each from an idle emulator (the
first run's jobs, most of them still queued when its calls end, are let finish before the
second starts, else the second's calls share the emulator with running them).

``--client-nice 10`` runs the clients at a lower priority than the emulator: on a machine of
2 cores the 20 clients' own CPU (the official REST transport's is 5 to 8 times the gRPC
one's: ``requests`` and ``json_format``) otherwise delays the emulator's threads, most of all
a Create's, which waits for the records' lock and so for more wakeups.

The emulator runs in a session of its own (``--server-session own``), as ``trainpool
emulator`` does when a user starts it in a terminal or as a service and the clients run
elsewhere: where the kernel shares the CPU between sessions first (Linux's autogroup, on by
default: ``/proc/sys/kernel/sched_autogroup_enabled``) it gets its share beside the 20
clients, as it would beside 20 users' programs. ``--server-session shared`` puts it in this
script's session with the clients, as runs before 2026-11-29 did: there each of its threads
competes with each client process, and every handover of the GIL waits for a core.

``--call-times`` runs the emulator under ``call_times.py`` and adds the emulator's own time
of each method, by door (the method itself, and a record's write: waiting for its turn and
committed), so that what the emulator does is seen apart from what the clients do.

Then ``--gcloud`` times, under ``trainpool exec``'s environment: ``gcloud ai custom-jobs
create --config`` followed by ``gcloud ai custom-jobs describe``, and, for comparison, the
same number of ``gcloud config get-value project`` (gcloud's start-up, no request at all):
gcloud's own start-up is most of a command's time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from job_calls import KINDS, PARTS, TimedCalls, count_json_mapping, percentile

PARENT = "projects/bench/locations/us-central1"
"""Where gcloud's jobs go; each transport's load has its own project (:func:`parent`)."""
DONE = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}
DRAIN_S = 600.0
JOB = {
    "display_name": "rest-bench",
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


def parent(transport: str) -> str:
    return f"projects/bench-{transport}/locations/us-central1"


def drain(transport: str) -> float:
    """Wait until every job of ``transport``'s load has ended; the seconds it took."""
    from trainpool.vertex.clients import job_client

    client, began = job_client("us-central1"), time.perf_counter()
    while time.perf_counter() - began < DRAIN_S:
        jobs = client.list_custom_jobs(request={"parent": parent(transport), "page_size": 1000})
        if all(job.state.name in DONE for job in jobs):
            break
        time.sleep(0.5)
    return time.perf_counter() - began


def autogroup() -> str:
    """Whether the kernel shares the CPU between sessions first (Linux's autogroup)."""
    try:
        on = Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    except OSError:
        return "autogroup unknown"
    return "autogroup on" if on else "autogroup off"


def make_client(transport: str) -> Any:
    from google.cloud import aiplatform_v1

    if transport == "grpc":
        from trainpool.vertex.clients import job_client

        return job_client("us-central1")
    from google.oauth2.credentials import Credentials

    rest = aiplatform_v1.services.job_service.transports.rest.JobServiceRestTransport
    host = os.environ["BENCH_REST"].removeprefix("http://")
    token = Path(os.environ["BENCH_TOKEN_FILE"]).read_text().strip()
    return aiplatform_v1.JobServiceClient(
        transport=rest(
            host=f"{host}/us-central1-aiplatform.googleapis.com",
            credentials=Credentials(token=token),
            url_scheme="http",
        )
    )


def client_main(index: int, jobs: int, transport: str) -> None:
    label = f"{transport}{index}"
    calls = TimedCalls(make_client(transport), parent(transport), label, count_json_mapping())
    calls.ready()
    calls.load({**JOB, "labels": {"client": label}}, jobs)
    print(json.dumps(calls.figures()), flush=True)


def load(args: argparse.Namespace, env: dict[str, str], transport: str) -> dict[str, Any]:
    nice = ["nice", "-n", str(args.client_nice)] if args.client_nice else []
    clients = [
        subprocess.Popen(
            [*nice, sys.executable, __file__, "--client", str(i), "--jobs", str(args.jobs)]
            + ["--transport", transport],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        for i in range(args.clients)
    ]
    for proc in clients:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    began = time.perf_counter()
    for proc in clients:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    merged: dict[str, dict[str, list[float]]] = {
        part: {kind: [] for kind in KINDS} for part in PARTS
    }
    for proc in clients:
        assert proc.stdout is not None
        for part, kinds in json.loads(proc.stdout.readline()).items():
            for kind, values in kinds.items():
                merged[part][kind] += values
        proc.wait()
    wall = time.perf_counter() - began
    return {"wall": wall, **merged, "drain": drain(transport)}


def client_split(results: dict[str, Any]) -> list[str]:
    """Lines of each call's own CPU in its client (p50), and of it the JSON mapping, by
    transport: what the client spends whatever the emulator does."""
    head = "the client's own CPU, ms"
    lines = [f"{head:34}{'gRPC p50':>10}{'REST p50':>10}{'of it JSON':>12}"]
    for kind in KINDS:
        grpc = percentile(results["grpc"]["cpu"][kind], 0.5) * 1000
        rest = percentile(results["rest"]["cpu"][kind], 0.5) * 1000
        mapped = percentile(results["rest"]["mapping"][kind], 0.5) * 1000
        lines.append(f"{kind:34}{grpc:10.1f}{rest:10.1f}{mapped:12.1f}")
    return lines


def gcloud_times(args: argparse.Namespace, root: Path, tmp: Path) -> None:
    gcloud = shutil.which("gcloud")
    if gcloud is None or args.gcloud < 1:
        print("gcloud: not timed (" + ("--gcloud 0" if gcloud else "not installed here") + ")")
        return
    config = tmp / "job.yaml"
    config.write_text(
        "workerPoolSpecs:\n  - machineSpec: {machineType: n1-standard-4}\n    replicaCount: 1\n"
        "    containerSpec: {imageUri: local/none, command: ['true']}\n"
    )
    exec_ = [
        sys.executable,
        "-m",
        "trainpool.cli",
        "exec",
        "--root",
        str(root),
        "--project",
        "bench",
        "--",
    ]
    env = subprocess.run(
        [*exec_, sys.executable, "-c", "import os, json; print(json.dumps(dict(os.environ)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    environ = json.loads(env.stdout)
    region = "--region=us-central1"

    def timed(argv: list[str]) -> tuple[float, str]:
        began = time.perf_counter()
        done = subprocess.run(argv, env=environ, capture_output=True, text=True, check=True)
        return time.perf_counter() - began, done.stdout

    create, describe, idle = [], [], []
    for _ in range(args.gcloud):
        took, out = timed(
            [
                gcloud,
                "ai",
                "custom-jobs",
                "create",
                region,
                "--display-name=g",
                f"--config={config}",
                "--format=value(name)",
            ]
        )
        create.append(took)
        job = out.strip().rsplit("/", 1)[1]
        describe.append(
            timed([gcloud, "ai", "custom-jobs", "describe", job, region, "--format=value(state)"])[
                0
            ]
        )
        idle.append(timed([gcloud, "config", "get-value", "project"])[0])
    both = [c + d for c, d in zip(create, describe, strict=True)]
    start = statistics.median(idle)
    print(f"gcloud, {args.gcloud} times each (median, min-max), under trainpool exec:")
    for name, values in (
        ("create", create),
        ("describe", describe),
        ("create + describe", both),
        ("config get-value (start-up only)", idle),
    ):
        print(
            f"  {name:34} {statistics.median(values):6.2f} s  ({min(values):.2f}-{max(values):.2f})"
        )
    print(
        f"  gcloud's start-up is {2 * start / statistics.median(both):.0%} of create + describe "
        f"({2 * start:.2f} of {statistics.median(both):.2f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--gcloud", type=int, default=5)
    parser.add_argument(
        "--client-nice",
        type=int,
        default=0,
        help="run the client processes at this niceness (10: the emulator is served first, so "
        "the figures hold less of the clients' own CPU, which REST's client spends 5 to 8 "
        "times gRPC's on; 2 cores shared with 20 clients)",
    )
    parser.add_argument(
        "--server-session",
        choices=("own", "shared"),
        default="own",
        help="own: the emulator in a session of its own, as `trainpool emulator` started in a "
        "terminal or as a service is (where the kernel groups CPU time by session, as Linux "
        "does by default, it then gets its share beside the clients' session); shared: in "
        "this script's session with the 20 clients (how runs before 2026-11-29 measured)",
    )
    parser.add_argument(
        "--call-times",
        action="store_true",
        help="also print the emulator's own time of each method, by door (call_times.py)",
    )
    parser.add_argument("--transport", default="grpc", help=argparse.SUPPRESS)
    parser.add_argument("--client", type=int, default=-1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client >= 0:
        client_main(args.client, args.jobs, args.transport)
        return
    with tempfile.TemporaryDirectory(prefix="bench-rest-") as tmp:
        root, times = Path(tmp) / "root", Path(tmp) / "call-times.json"
        run = [str(Path(__file__).with_name("call_times.py")), str(times)]
        server = subprocess.Popen(
            [sys.executable, *(run if args.call_times else ["-m", "trainpool.cli"])]
            + ["emulator", "--root", str(root)],
            cwd=tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=args.server_session == "own",
        )
        assert server.stdout is not None
        lines = [server.stdout.readline() for _ in range(3)]
        address = lines[0].split()[5]
        rest = next(line.split()[4] for line in lines if line.startswith("REST door"))
        os.environ["VERTEX_AI_EMULATOR_HOST"] = address  # for drain()
        env = dict(
            os.environ,
            VERTEX_AI_EMULATOR_HOST=address,
            BENCH_REST=rest,
            BENCH_TOKEN_FILE=str(root / "storage.token"),
        )
        try:
            results = {t: load(args, env, t) for t in ("grpc", "rest")}
            where = "its own session" if args.server_session == "own" else "the clients' session"
            print(
                f"{args.clients} clients x {args.jobs} jobs, each Create followed by a Get "
                f"and a List; the emulator in {where} ({autogroup()})"
            )
            print(f"{'':8}{'gRPC p50':>10}{'p99':>8}{'REST p50':>12}{'p99':>8}  (ms)")
            for kind in KINDS:
                row = []
                for transport in ("grpc", "rest"):
                    values = results[transport]["times"][kind]
                    row += [percentile(values, 0.5) * 1000, percentile(values, 0.99) * 1000]
                print(f"{kind:8}{row[0]:10.1f}{row[1]:8.1f}{row[2]:12.1f}{row[3]:8.1f}")
            print(
                f"all calls done in: gRPC {results['grpc']['wall']:.1f} s, "
                f"REST {results['rest']['wall']:.1f} s (then their jobs ended in "
                f"{results['grpc']['drain']:.1f} and {results['rest']['drain']:.1f} s)"
            )
            print("\n".join(client_split(results)))
            if args.call_times:
                time.sleep(1.5)  # its last second written
                from call_times import summary

                print("\n".join(summary(times)))
            gcloud_times(args, root, Path(tmp))
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
