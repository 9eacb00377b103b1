"""The same pipelines built from GCPC's CustomTrainingJobOp and from trainpool's
launch_custom_job, run locally side by side.

    python3 benchmarks/bench_gcpc.py [--rounds 3] [--job-seconds 2] [--jobs 1 2]

Each pipeline runs ``--jobs`` CustomJobs one after the other, each of one replica sleeping
``--job-seconds``. Each round runs, on one emulator: GCPC with its launchers started ahead
(:mod:`trainpool.kfprun.warm`, the default), GCPC cold (``TRAINPOOL_WARM_LAUNCHERS=0``, as
kfp.local starts a task), trainpool. Prints each run's wall time (``trainpool run
--local``'s own figure), the medians, and the GCPC/trainpool ratio pair by pair (goal of
issue 20: at most 1.2 for the one-job pipeline).
"""

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google_cloud_pipeline_components.v1.custom_job import CustomTrainingJobOp
from kfp import compiler, components, dsl

from trainpool import emulator
from trainpool.kfprun.execute import patched_environ
from trainpool.kfprun.warm import SWITCH_ENV
from trainpool.localrun.runner import run_local

REPO = Path(__file__).resolve().parents[1]


def pipelines(seconds: float, jobs: int, folder: Path) -> dict[str, Path]:
    command = [sys.executable, "-c", f"import time; time.sleep({seconds})"]
    launch = components.load_component_from_file(
        str(REPO / "component_specs" / "launch_custom_job.yaml")
    )

    def in_a_row(task: Callable[[str], Any]) -> None:
        """``jobs`` tasks, each after the one before."""
        previous = None
        for index in range(jobs):
            current = task(f"bench-{index}")
            if previous is not None:
                current.after(previous)
            previous = current

    def with_trainpool() -> None:
        in_a_row(
            lambda name: launch(
                project="local-project",
                location="us-central1",
                display_name=name,
                custom_job_spec={
                    "workerPoolSpecs": [
                        {
                            "machineSpec": {"machineType": "n1-standard-4"},
                            "replicaCount": 1,
                            "containerSpec": {"imageUri": "python:3.11", "command": command},
                        }
                    ]
                },
            )
        )

    def with_gcpc() -> None:
        in_a_row(
            lambda name: CustomTrainingJobOp(
                display_name=name,
                worker_pool_specs=[
                    {
                        "machine_spec": {"machine_type": "n1-standard-4"},
                        "replica_count": 1,
                        "container_spec": {"image_uri": "python:3.11", "command": command},
                    }
                ],
            )
        )

    paths = {}
    for name, function in (("gcpc", with_gcpc), ("trainpool", with_trainpool)):
        paths[name] = folder / f"{name}-{jobs}.yaml"
        pipeline = dsl.pipeline(name=f"bench-{name}-{jobs}")(function)
        compiler.Compiler().compile(pipeline, str(paths[name]))
    return paths


RUNS = (("gcpc", "gcpc", "1"), ("gcpc-cold", "gcpc", "0"), ("trainpool", "trainpool", "1"))
"""(what is printed, which pipeline, TRAINPOOL_WARM_LAUNCHERS)"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--job-seconds", type=float, default=2.0)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        with emulator.start(Path(tmp) / "root", storage=True) as emu:
            variables = {
                "VERTEX_AI_EMULATOR_HOST": emu.address,
                "STORAGE_EMULATOR_HOST": emu.storage_address or "",
            }
            for jobs in args.jobs:
                paths = pipelines(args.job_seconds, jobs, Path(tmp))
                walls: dict[str, list[float]] = {name: [] for name, _, _ in RUNS}
                for _ in range(args.rounds):
                    for name, pipeline, switch in RUNS:
                        with patched_environ({**variables, SWITCH_ENV: switch}):
                            result = run_local(paths[pipeline], {})
                        if not result.ok:
                            raise SystemExit(f"{name}: {result.state}: {result.error}")
                        walls[name].append(result.seconds)
                report(jobs, args, walls)


def report(jobs: int, args: argparse.Namespace, walls: dict[str, list[float]]) -> None:
    print(
        f"{jobs} CustomJob(s) in a row, one replica sleeping {args.job_seconds:g} s each, "
        f"{args.rounds} rounds"
    )
    for name, values in walls.items():
        runs = ", ".join(f"{v:.2f}" for v in values)
        print(f"  {name:<10} median {statistics.median(values):6.2f} s   runs [{runs}]")
    for name in ("gcpc", "gcpc-cold"):
        ratios = [g / t for g, t in zip(walls[name], walls["trainpool"], strict=True)]
        print(
            f"  ratio {name}/trainpool median {statistics.median(ratios):.3f}"
            f"{' (goal <= 1.2)' if jobs == 1 and name == 'gcpc' else ''}; "
            f"per pair [{', '.join(f'{r:.2f}' for r in ratios)}]"
        )


if __name__ == "__main__":
    main()
