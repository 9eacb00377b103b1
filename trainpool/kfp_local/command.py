"""``PIPELINE [--param NAME=VALUE ...] ...``: one run, as a process of its own.

The body of the process the emulator's PipelineService starts for each PipelineJob (in a
process group of its own, its output the job's ``run.log``;
``trainpool.emulator.pipeline_jobs.run_process`` gives it its launcher): it runs the pipeline
against the emulator ``VERTEX_AI_EMULATOR_HOST`` names and exits 0 when the run SUCCEEDED,
1 when it FAILED (after a ``pipeline NAME FAILED: ...`` line and the failed tasks' last
lines), 2 for bad input, and 128 + the signal number when SIGTERM or SIGINT cancelled it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from trainpool.home import Home
from trainpool.kfp_local.launching import Launcher


def main(
    argv: list[str] | None,
    launcher: Callable[[Home], Launcher],
    project_number: str = "0",
    prog: str = "run_process",
) -> int:
    """Run the pipeline ``argv`` names, each task by ``launcher(home)``; the exit status."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("pipeline", help="a compiled pipeline (YAML or JSON)")
    parser.add_argument("--root", required=True, help="the local store")
    parser.add_argument("--project", required=True)
    parser.add_argument("--location", required=True)
    parser.add_argument("--pipeline-root", required=True, help="gs://BUCKET/PATH")
    parser.add_argument("--run-id", default="", help="the value of the run's jobs' label")
    parser.add_argument("--job-id", default="", help="the PipelineJob's id (placeholders)")
    parser.add_argument("--details", default="", help="keep the task details (JSON) here")
    parser.add_argument("--files", default="", help="the run's own files (default: local-runs/)")
    parser.add_argument("--param", action="append", default=[], help="NAME=VALUE")
    args = parser.parse_args(argv)

    from pathlib import Path

    from trainpool.kfp_local.execute import PipelineExecution
    from trainpool.spec.pipeline_params import load_pipeline_spec, parse_params, pipeline_inputs

    try:
        values = parse_params(args.param, pipeline_inputs(load_pipeline_spec(args.pipeline)))
        run = PipelineExecution(
            args.pipeline,
            values,
            Home(Path(args.root)),
            project=args.project,
            location=args.location,
            pipeline_root=args.pipeline_root,
            run_id=args.run_id,
            job_id=args.job_id,
            project_number=project_number,
            files=Path(args.files) if args.files else None,
        )
    except (OSError, ValueError) as err:
        print(f"pipeline {args.pipeline} FAILED: {err}", file=sys.stderr)
        return 2
    result = run.execute(launcher(run.home), details=Path(args.details) if args.details else None)
    if result.signal is not None:
        print(f"pipeline {result.pipeline} CANCELLED: {result.error}", file=sys.stderr)
        return 128 + result.signal
    if not result.ok:
        print(f"pipeline {result.pipeline} FAILED: {result.error}", file=sys.stderr)
        for task in result.tasks:
            if task.state == "FAILED":
                print(f"task {task.name}, last lines:", file=sys.stderr)
                for line in task.tail:
                    print(f"  {line}", file=sys.stderr)
        print(f"transcript: {result.transcript}", file=sys.stderr)
        return 1
    print(f"pipeline {result.pipeline} SUCCEEDED in {result.seconds:.1f}s")
    print(f"transcript: {result.transcript}")
    print("outputs: " + json.dumps(result.outputs, indent=2, sort_keys=True, default=str))
    return 0
