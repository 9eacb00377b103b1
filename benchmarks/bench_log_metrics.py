"""What the emulator's metadata store adds per ``aiplatform.log_metrics`` call.

``python3 benchmarks/bench_log_metrics.py [--calls 1000] [--mode both|emulator|removed]``:
an emulator (in this process, with its doors), ``aiplatform.init(experiment=...)`` and
``start_run``, then ``--calls`` iterations of a trainer's loop that logs its metrics
(``aiplatform.log_metrics``: one UpdateContext each, over gRPC), timed; ``removed`` times
the same loop with the Experiments call taken out (the metrics still computed), so the
difference is what the call costs. ``both`` (default) runs the two one after the other
and prints per-call figures; ``emulator`` / ``removed`` run one, for an outside timer to
compare whole processes.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from google.cloud import aiplatform

from trainpool.testing import emulated_vertex


def loop(calls: int, log: bool) -> list[float]:
    durations = []
    for step in range(calls):
        started = time.perf_counter()
        metrics = {"loss": 1.0 / (step + 1), "accuracy": step / calls}
        if log:
            aiplatform.log_metrics(metrics)
        durations.append(time.perf_counter() - started)
    return durations


def report(name: str, durations: list[float]) -> None:
    ordered = sorted(durations)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    print(
        f"{name:<28} {len(durations):>5} calls  total {sum(durations):7.3f} s  "
        f"mean {statistics.mean(durations) * 1e3:7.3f} ms  "
        f"p50 {statistics.median(durations) * 1e3:7.3f} ms  p99 {p99 * 1e3:7.3f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--mode", choices=["both", "emulator", "removed"], default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root, emulated_vertex(Path(root) / "r", "demo"):
        aiplatform.init(project="demo", location="us-central1", experiment="bench-metrics")
        aiplatform.start_run("bench-run")
        timed = {}
        if args.mode in ("both", "emulator"):
            timed["log_metrics on the emulator"] = loop(args.calls, True)
        if args.mode in ("both", "removed"):
            timed["Experiments call removed"] = loop(args.calls, False)
        aiplatform.end_run()
        for name, durations in timed.items():
            report(name, durations)
        if len(timed) == 2:
            added = sum(timed["log_metrics on the emulator"]) - sum(
                timed["Experiments call removed"]
            )
            print(f"the metadata store adds {added / args.calls * 1e3:.3f} ms per log_metrics call")
        assert (
            aiplatform.ExperimentRun("bench-run", "bench-metrics").get_metrics()
            or args.mode == "removed"
        )


if __name__ == "__main__":
    main()
