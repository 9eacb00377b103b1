"""``aiplatform.PipelineJob(...).submit()`` to the emulator: how long the SDK's submit takes.

    python3 benchmarks/bench_submit.py [--repeats 5]

An unchanged user script (tests/fixtures/user_code/submit_pipeline.py's submit, timed
inside the script) runs under ``trainpool exec``: the SDK creates the pipeline root's
bucket check, asks Cloud Resource Manager for the project number (served by the emulator)
and creates the PipelineJob. Prints each submit() time and the median (goal: under 1 s).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from kfp import compiler, dsl

CLI = [sys.executable, "-c", "from trainpool.cli import main; main()"]
SUBMIT = """
import json, sys, time
from google.cloud import aiplatform, storage
bucket = f"bench-root-{sys.argv[3]}"
storage.Client(project="demo").create_bucket(bucket)
aiplatform.init(project="demo", location="us-central1")
job = aiplatform.PipelineJob(display_name="bench", template_path=sys.argv[1],
                             pipeline_root=f"gs://{bucket}/runs", enable_caching=False)
started = time.monotonic()
job.submit()
print(json.dumps({"submit_s": time.monotonic() - started}))
"""


@dsl.component(base_image="python:3.11")
def hello() -> str:
    return "hello"


@dsl.pipeline(name="bench-submit")
def pipeline() -> None:
    hello()


def timed(folder: Path, template: Path, mode: str, number: int) -> tuple[float, bool]:
    script = folder / "submit.py"
    script.write_text(SUBMIT)
    env = {k: v for k, v in os.environ.items() if k != "VERTEX_AI_EMULATOR_HOST"}
    done = subprocess.run(
        [
            *CLI,
            "exec",
            "--root",
            str(folder / "root"),
            "--",
            sys.executable,
            str(script),
            str(template),
            mode,
            str(number),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    line = [x for x in done.stdout.splitlines() if x.startswith("{")][-1]
    return json.loads(line)["submit_s"], "Traceback" in done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        template = folder / "pipeline.yaml"
        compiler.Compiler().compile(pipeline, str(template))
        runs = [timed(folder, template, "exec", n) for n in range(args.repeats)]
        times = [t for t, _ in runs]
        print(
            f"trainpool exec: submit() median {statistics.median(times):.3f} s, "
            f"runs [{', '.join(f'{t:.3f}' for t in times)}], "
            f"tracebacks {sum(tb for _, tb in runs)}/{len(runs)}"
        )


if __name__ == "__main__":
    main()
