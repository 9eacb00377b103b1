"""The same one-job pipeline built from GCPC's CustomTrainingJobOp and from trainpool's
launch_custom_job, run locally side by side.

    python3 benchmarks/bench_gcpc.py [--rounds 3] [--job-seconds 2]

Both pipelines create one CustomJob whose single replica sleeps ``--job-seconds`` and wait
for it; the rounds alternate GCPC, trainpool, GCPC, ... on one emulator. Prints each run's
wall time (``trainpool run --local``'s own figure), the medians, and the GCPC/trainpool
ratio pair by pair (goal: at most 1.2).
"""

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from google_cloud_pipeline_components.v1.custom_job import CustomTrainingJobOp
from kfp import compiler, components, dsl

from trainpool import emulator
from trainpool.kfprun.execute import patched_environ
from trainpool.localrun.runner import run_local

REPO = Path(__file__).resolve().parents[1]


def pipelines(seconds: float, folder: Path) -> dict[str, Path]:
    command = [sys.executable, "-c", f"import time; time.sleep({seconds})"]
    launch = components.load_component_from_file(
        str(REPO / "component_specs" / "launch_custom_job.yaml")
    )

    @dsl.pipeline(name="bench-trainpool")
    def with_trainpool() -> None:
        launch(
            project="local-project",
            location="us-central1",
            display_name="bench",
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

    @dsl.pipeline(name="bench-gcpc")
    def with_gcpc() -> None:
        CustomTrainingJobOp(
            display_name="bench",
            worker_pool_specs=[
                {
                    "machine_spec": {"machine_type": "n1-standard-4"},
                    "replica_count": 1,
                    "container_spec": {"image_uri": "python:3.11", "command": command},
                }
            ],
        )

    paths = {}
    for name, pipeline in (("gcpc", with_gcpc), ("trainpool", with_trainpool)):
        paths[name] = folder / f"{name}.yaml"
        compiler.Compiler().compile(pipeline, str(paths[name]))
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--job-seconds", type=float, default=2.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = pipelines(args.job_seconds, Path(tmp))
        with emulator.start(Path(tmp) / "root", storage=True) as emu:
            variables = {
                "VERTEX_AI_EMULATOR_HOST": emu.address,
                "STORAGE_EMULATOR_HOST": emu.storage_address or "",
            }
            with patched_environ(variables):
                walls: dict[str, list[float]] = {"gcpc": [], "trainpool": []}
                for _ in range(args.rounds):
                    for name in ("gcpc", "trainpool"):
                        result = run_local(paths[name], {})
                        if not result.ok:
                            raise SystemExit(f"{name}: {result.state}: {result.error}")
                        walls[name].append(result.seconds)
    ratios = [g / t for g, t in zip(walls["gcpc"], walls["trainpool"], strict=True)]
    print(f"one CustomJob of one replica sleeping {args.job_seconds:g} s, {args.rounds} rounds")
    for name, values in walls.items():
        runs = ", ".join(f"{v:.2f}" for v in values)
        print(f"{name:<10} median {statistics.median(values):6.2f} s   runs [{runs}]")
    print(
        f"ratio GCPC/trainpool median {statistics.median(ratios):.3f} (goal <= 1.2); "
        f"per pair [{', '.join(f'{r:.2f}' for r in ratios)}]"
    )


if __name__ == "__main__":
    main()
