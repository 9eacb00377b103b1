"""Wall time of a local pipeline run, its ratio to the trainers' own run time, and peak memory.

    python3 benchmarks/bench_pipeline.py [PIPELINE.yaml] [--param NAME=VALUE ...] [--root DIR]

The default pipeline is pipelines/distributed_training.yaml with its default
parameters. The floor is the time the emulator's jobs themselves ran (the union
of their start..end intervals): what is left is kfp.local, the components and
the emulator. Peak memory is the largest resident set of this process and of
any one child (tasks and replicas).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from trainpool import config, emulator
from trainpool.emulated.defaults import DEFAULT_LOCATION, DEFAULT_PROJECT
from trainpool.emulated.pipeline_run import run_local
from trainpool.kfp_local.execute import patched_environ
from trainpool.spec import placeholders
from trainpool.spec.pipeline_params import (
    load_pipeline_spec,
    parse_params,
    pipeline_defaults,
    pipeline_inputs,
)
from trainpool.vertex import clients

DEFAULT = Path(__file__).resolve().parent.parent / "pipelines" / "distributed_training.yaml"


def job_intervals(project: str, location: str, since: datetime) -> list[tuple[float, float]]:
    """``(start, end)`` seconds of every job created since ``since`` that ran."""
    client = clients.job_client(location)
    parent = f"projects/{project}/locations/{location}"
    jobs: list[Any] = list(client.list_custom_jobs(parent=parent))
    jobs += list(client.list_hyperparameter_tuning_jobs(parent=parent))
    return [
        (j.start_time.timestamp(), j.end_time.timestamp())
        for j in jobs
        if j.create_time.timestamp() >= since.timestamp() - 1 and j.start_time and j.end_time
    ]


def union_seconds(intervals: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pipeline", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--param", action="append", default=[], help="NAME=VALUE")
    parser.add_argument("--root", type=Path, default=None, help="local store (default: a temp dir)")
    args = parser.parse_args()
    if not args.pipeline.is_file():
        print(f"PIPELINE: {args.pipeline} does not exist; accepted: a compiled pipeline YAML")
        return 2
    spec = load_pipeline_spec(args.pipeline)
    values = parse_params(args.param, pipeline_inputs(spec))
    settings = {**pipeline_defaults(spec), **values}
    project = str(settings.get("project") or DEFAULT_PROJECT)
    location = str(settings.get("location") or DEFAULT_LOCATION)
    if project == placeholders.PROJECT_ID:  # a run's own project: the local run's stand-in
        project = DEFAULT_PROJECT
    if location == placeholders.LOCATION:
        location = DEFAULT_LOCATION
    root = args.root or Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    since = datetime.now().astimezone()
    with emulator.start(root) as running, patched_environ({config.EMULATOR_ENV: running.address}):
        started = time.perf_counter()
        result = run_local(args.pipeline, values, root, project=project, location=location)
        wall = time.perf_counter() - started
        floor = union_seconds(job_intervals(project, location, since)) if project else 0.0
    self_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"pipeline            {result.pipeline} ({args.pipeline})")
    print(f"state               {result.state}")
    print(f"tasks               {len(result.tasks)}; jobs on the emulator {len(result.jobs)}")
    print(f"wall time           {wall:.1f} s")
    print(f"trainers' own time  {floor:.1f} s (union of the jobs' start..end)")
    ratio = f"{wall / floor:.2f}" if floor else "n/a (no job ran)"
    print(f"ratio wall/trainers {ratio}")
    print(f"peak RSS            this process {self_mb:.0f} MiB; largest child {child_mb:.0f} MiB")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
