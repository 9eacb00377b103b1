"""Per-task overhead of a PipelineJob on the emulator: N trivial lightweight tasks against
the same N component functions run as bare Python processes.

    python3 benchmarks/bench_pipeline_tasks.py [--tasks 10] [--rounds 3]

The pipeline is a chain of ``--tasks`` calls of one lightweight component
(``@dsl.component(base_image="python:3.11")``, kfp's defaults, so each task installs kfp
as on Vertex), compiled with the project's kfp and created with PipelineService's
CreatePipelineJob over gRPC on an emulator started here; its time is from the create call
to the first GetPipelineJob (polled every 20 ms) that answers SUCCEEDED. The floor is the
same function called in ``--tasks`` bare ``python3 -c`` processes, one after the other.
Prints each round and the medians: the pipeline, the floor, and the overhead per task,
``(pipeline - floor) / tasks`` (issue 35's goal: at most 0.3 s).
"""

import argparse
import inspect
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from google.cloud.aiplatform_v1.types import pipeline_job as pj
from google.protobuf import json_format, struct_pb2
from kfp import compiler, dsl

from trainpool import emulator
from trainpool.kfp_local.execute import patched_environ
from trainpool.vertex import clients

PARENT = "projects/bench/locations/us-central1"


@dsl.component(base_image="python:3.11")
def step(x: int) -> int:
    return x + 1


def chain(tasks: int, folder: Path) -> Path:
    def body() -> None:
        value = step(x=0)
        for _ in range(tasks - 1):
            value = step(x=value.output)

    path = folder / f"chain-{tasks}.yaml"
    compiler.Compiler().compile(dsl.pipeline(name=f"chain-{tasks}")(body), str(path))
    return path


def uncached(spec: dict) -> dict:
    """``spec`` with every task's cache off, as ``PipelineJob(enable_caching=False)`` sends it
    (google-cloud-aiplatform ``pipeline_jobs.py``, ``_set_enable_caching_value``)."""
    for component in [spec["root"], *spec.get("components", {}).values()]:
        for task in component.get("dag", {}).get("tasks", {}).values():
            task["cachingOptions"] = {"enableCache": False}
    return spec


def pipeline_seconds(client: object, path: Path) -> float:
    spec = struct_pb2.Struct()
    json_format.ParseDict(uncached(yaml.safe_load(path.read_text())), spec)
    job = pj.PipelineJob(
        display_name="bench",
        pipeline_spec=spec,
        runtime_config=pj.PipelineJob.RuntimeConfig(gcs_output_directory="gs://bench/root"),
    )
    started = time.perf_counter()
    created = client.create_pipeline_job(parent=PARENT, pipeline_job=job)  # type: ignore[attr-defined]
    while True:
        got = client.get_pipeline_job(name=created.name)  # type: ignore[attr-defined]
        if got.state.name in ("PIPELINE_STATE_SUCCEEDED", "PIPELINE_STATE_FAILED"):
            break
        time.sleep(0.02)
    seconds = time.perf_counter() - started
    if got.state.name != "PIPELINE_STATE_SUCCEEDED":
        raise SystemExit(f"{created.name}: {got.state.name}: {got.error.message}")
    return seconds


def floor_seconds(tasks: int) -> float:
    """The component's function called in ``tasks`` bare Python processes, one after another."""
    source = inspect.getsource(step.python_func)
    source = source[source.index("def ") :]
    started = time.perf_counter()
    for index in range(tasks):
        subprocess.run([sys.executable, "-c", f"{source}\nstep(x={index})"], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = chain(args.tasks, Path(tmp))
        with (
            emulator.start(Path(tmp) / "root") as emu,
            patched_environ({"VERTEX_AI_EMULATOR_HOST": emu.address}),
        ):
            client = clients.pipeline_client("us-central1")
            pipeline_seconds(client, path)  # warm-up: environments made once per store
            rows = []
            for _ in range(args.rounds):
                wall, floor = pipeline_seconds(client, path), floor_seconds(args.tasks)
                rows.append((wall, floor, (wall - floor) / args.tasks))
                print(
                    f"  pipeline {wall:6.2f} s  floor {floor:5.2f} s  per task {rows[-1][2]:.3f} s"
                )
    walls, floors, per_task = zip(*rows, strict=True)
    print(
        f"{args.tasks} trivial tasks, {args.rounds} rounds: pipeline median "
        f"{statistics.median(walls):.2f} s, floor median {statistics.median(floors):.2f} s, "
        f"overhead per task median {statistics.median(per_task):.3f} s (goal <= 0.3)"
    )


if __name__ == "__main__":
    main()
