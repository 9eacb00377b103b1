"""The same pipelines built from GCPC's CustomTrainingJobOp and from trainpool's
launch_custom_job, run side by side.

    python3 benchmarks/bench_gcpc.py [--rounds 3] [--job-seconds 2] [--jobs 1 2] [--via local]

Each pipeline runs ``--jobs`` CustomJobs one after the other, each of one replica sleeping
``--job-seconds``. Each round runs, on one emulator: GCPC with its launchers started ahead
(:mod:`trainpool.emulator.pipeline_jobs.warm`, the default), GCPC cold
(``TRAINPOOL_WARM_LAUNCHERS=0``), trainpool. ``--via pipelinejob`` (the default) creates
each as a PipelineJob with PipelineService's CreatePipelineJob over gRPC, as
``aiplatform.PipelineJob`` submits one (caching off, as ``enable_caching=False`` sends it),
and times the create call to the first GetPipelineJob (polled every 20 ms) that answers
SUCCEEDED; ``--via local`` runs each as ``trainpool run --local`` does and takes its own
figure. Prints each run's wall time, the medians, and the GCPC/trainpool ratio pair by
pair (goal of issues 20 and 35: at most 1.2 for the one-job pipeline).
"""

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from google.cloud.aiplatform_v1.types import pipeline_job as pj
from google.protobuf import json_format, struct_pb2
from google_cloud_pipeline_components.v1.custom_job import CustomTrainingJobOp
from kfp import compiler, components, dsl

from trainpool import emulator
from trainpool.emulated.pipeline_run import run_local
from trainpool.kfp_local.execute import patched_environ
from trainpool.vertex import clients

REPO = Path(__file__).resolve().parents[1]
SWITCH_ENV = "TRAINPOOL_WARM_LAUNCHERS"
"""``0`` starts every GCPC task cold (``trainpool.emulator.pipeline_jobs.warm.SWITCH_ENV``; named
here so this script runs against earlier trainpool too)."""


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


def uncached(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with every task's cache off, as ``PipelineJob(enable_caching=False)`` sends it
    (google-cloud-aiplatform ``pipeline_jobs.py``, ``_set_enable_caching_value``)."""
    for component in [spec["root"], *spec.get("components", {}).values()]:
        for task in component.get("dag", {}).get("tasks", {}).values():
            task["cachingOptions"] = {"enableCache": False}
    return spec


def as_pipeline_job(path: Path, client: Any) -> float:
    """Seconds from CreatePipelineJob to SUCCEEDED, on the emulator ``client`` talks to."""
    spec = struct_pb2.Struct()
    json_format.ParseDict(uncached(yaml.safe_load(path.read_text())), spec)
    job = pj.PipelineJob(
        display_name=path.stem,
        pipeline_spec=spec,
        runtime_config=pj.PipelineJob.RuntimeConfig(gcs_output_directory="gs://bench/root"),
    )
    started = time.perf_counter()
    created = client.create_pipeline_job(
        parent="projects/local-project/locations/us-central1", pipeline_job=job
    )
    while True:
        got = client.get_pipeline_job(name=created.name)
        if got.state.name in ("PIPELINE_STATE_SUCCEEDED", "PIPELINE_STATE_FAILED"):
            break
        time.sleep(0.02)
    if got.state.name != "PIPELINE_STATE_SUCCEEDED":
        raise SystemExit(f"{created.name}: {got.state.name}: {got.error.message}")
    return time.perf_counter() - started


RUNS = (("gcpc", "gcpc", "1"), ("gcpc-cold", "gcpc", "0"), ("trainpool", "trainpool", "1"))
"""(what is printed, which pipeline, TRAINPOOL_WARM_LAUNCHERS)"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--job-seconds", type=float, default=2.0)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--via", choices=("pipelinejob", "local"), default="pipelinejob")
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
                            if args.via == "local":
                                result = run_local(paths[pipeline], {})
                                if not result.ok:
                                    raise SystemExit(f"{name}: {result.state}: {result.error}")
                                walls[name].append(result.seconds)
                            else:
                                client = clients.pipeline_client("us-central1")
                                walls[name].append(as_pipeline_job(paths[pipeline], client))
                report(jobs, args, walls)


def report(jobs: int, args: argparse.Namespace, walls: dict[str, list[float]]) -> None:
    print(
        f"{jobs} CustomJob(s) in a row, one replica sleeping {args.job_seconds:g} s each, "
        f"{args.rounds} rounds, via {args.via}"
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
