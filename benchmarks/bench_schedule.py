"""Seven nights of the main job fired by a schedule on the emulator's moved clock, against
seven runs of the same pipeline started by hand one after another, in the same session.

    python3 benchmarks/bench_schedule.py [--nights 7] [--epochs 2] [--root DIR]

Both halves run pipelines/distributed_training.yaml with max_trial_count=0 (one CustomJob,
a primary replica, ``--epochs`` epochs) on one emulator, after one warm-up run (the
trainer's image built into the local store, the source uploaded). By hand: the warm-up's
request again (CreatePipelineJob, as a schedule sends it), polled until it ends, then the
next. Scheduled: `trainpool submit --schedule "0 3 * * *"`
then one ``AdvanceClock(by=N days, wait_for_runs)``, which waits at each fire time until
that night's run has ended. Prints each half's wall time, per run, and the ratio; then
each half split into its runs' own time (PipelineJob create to end, as the emulator
recorded it) and the rest: the time between runs, which is what starting a run by hand or
by the schedule costs. The runs' own times vary with the machine's load (on a shared
machine, more than the machinery costs): the machinery's figure is the time between runs.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from google.cloud.aiplatform_v1 import PipelineJob

from trainpool import config, emulator
from trainpool.emulator_client import advance_clock
from trainpool.kfp_local.execute import patched_environ
from trainpool.vertex import clients
from trainpool.vertex.pipelines import Target, submit
from trainpool.vertex.submit import submit_pipeline

ROOT = Path(__file__).resolve().parent.parent
PIPELINE = ROOT / "pipelines" / "distributed_training.yaml"
EXAMPLE = ROOT / "examples" / "pytorch_ddp"
TARGET = Target("bench-project", "us-central1", "gs://bench-bucket/runs")
FINAL = ("PIPELINE_STATE_SUCCEEDED", "PIPELINE_STATE_FAILED", "PIPELINE_STATE_CANCELLED")


def params(epochs: int) -> list[str]:
    request = {"primary": {"machine_type": "n1-standard-4"}, "args": [f"--epochs={epochs}"]}
    return [
        f"source_dir={EXAMPLE}",
        "max_trial_count=0",
        f"cluster_request={json.dumps(request)}",
    ]


def wait(name: str) -> None:
    client = clients.pipeline_client(TARGET.location)
    while (job := client.get_pipeline_job(name=name)).state.name not in FINAL:
        time.sleep(0.1)
    assert job.state.name == "PIPELINE_STATE_SUCCEEDED", job.error.message


def own_seconds(names: list[str]) -> float:
    """The runs' own time: each PipelineJob's create to end, as the emulator recorded it."""
    client = clients.pipeline_client(TARGET.location)
    jobs = [client.get_pipeline_job(name=name) for name in names]
    return sum((job.end_time - job.create_time).total_seconds() for job in jobs)


def by_hand(template: Any, runs: int) -> tuple[list[float], list[str]]:
    """``runs`` PipelineJobs (the template's request, as a schedule sends it) created one
    after another, each waited for; seconds each."""
    seconds, names = [], []
    for number in range(runs):
        began = time.monotonic()
        job = type(template).deserialize(type(template).serialize(template))
        names.append(submit(f"by-hand-{number}", job, TARGET).name)
        wait(names[-1])
        seconds.append(time.monotonic() - began)
    return seconds, names


def scheduled(address: str, epochs: int, nights: int) -> tuple[float, float, list[Any]]:
    """The schedule's create time, the advance's wall time, and its runs."""
    began = time.monotonic()
    made = submit_pipeline(
        PIPELINE, TARGET, params(epochs), schedule="0 3 * * *", display_name="nightly"
    )
    create_s = time.monotonic() - began
    began = time.monotonic()
    done = advance_clock(address, by=timedelta(days=nights), wait_for_runs=True)
    advance_s = time.monotonic() - began
    assert done.idle and len(done.started) == nights, done.events
    client = clients.pipeline_client(TARGET.location)
    request = {"parent": TARGET.parent, "filter": f"schedule_name={made.schedule.name}"}
    return create_s, advance_s, list(client.list_pipeline_jobs(request=request))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=7)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--root", type=Path, default=None)
    args = parser.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="bench-schedule-"))
    (root / "gcs" / "bench-bucket").mkdir(parents=True, exist_ok=True)
    with emulator.start(root) as emu:
        env = {config.EMULATOR_ENV: emu.address, config.HOME_ENV: str(root)}
        with patched_environ(env):
            began = time.monotonic()
            first = submit_pipeline(PIPELINE, TARGET, params(args.epochs)).job
            wait(first.name)
            warm = time.monotonic() - began
            template = PipelineJob(
                display_name=first.display_name,
                pipeline_spec=first.pipeline_spec,
                runtime_config=first.runtime_config,
            )
            hand, names = by_hand(template, args.nights)
            hand_own = own_seconds(names)
            create_s, advance_s, runs = scheduled(emu.address, args.epochs, args.nights)
            nights_own = own_seconds([job.name for job in runs])
    states = [job.state.name for job in runs]
    assert states.count("PIPELINE_STATE_SUCCEEDED") == args.nights, states
    total = sum(hand)
    print(f"pipeline: {PIPELINE.name}, max_trial_count=0, 1 primary, --epochs={args.epochs}")
    print(f"warm-up run (image build, source upload): {warm:.1f} s")
    print(
        f"by hand:   {args.nights} runs one after another: {total:.1f} s "
        f"({total / args.nights:.1f} s per run; min {min(hand):.1f}, max {max(hand):.1f})"
    )
    print(
        f"scheduled: {args.nights} nights, one AdvanceClock(by={args.nights}d, wait_for_runs): "
        f"{advance_s:.1f} s ({advance_s / args.nights:.1f} s per night); creating the "
        f"schedule took {create_s:.2f} s"
    )
    print(f"ratio scheduled / by hand: {advance_s / total:.3f} ({advance_s / total - 1:+.1%})")
    hand_gap, nights_gap = total - hand_own, advance_s - nights_own
    print(
        f"runs' own time: by hand {hand_own:.1f} s, scheduled {nights_own:.1f} s; between runs: "
        f"by hand {hand_gap:.2f} s ({hand_gap / args.nights:.3f} s per run), scheduled "
        f"{nights_gap:.2f} s ({nights_gap / args.nights:.3f} s per night)"
    )
    print(
        f"schedule machinery (time between runs, scheduled minus by hand): "
        f"{nights_gap - hand_gap:+.2f} s, {(nights_gap - hand_gap) / total:+.2%} of the by-hand "
        "wall time"
    )
    print(f"store: {root}")


if __name__ == "__main__":
    main()
