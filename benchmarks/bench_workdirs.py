"""What a replica's fresh working directory costs: a copy of its image's build context.

Run: python3 benchmarks/bench_workdirs.py [REPEATS]
Times ``Workdir.fresh()`` (empty the folder, copy the context: plain files, no hard links
into the store) for the PyTorch example's context and for a synthetic context of 200
files of 50 kB (10 MB); every replica pays this before each start.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from trainpool.emulator.jobs.workdirs import Workdir

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "pytorch_ddp"


def timed(source: Path, repeats: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Workdir(Path(tmp) / "workerpool0-0", source)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            workdir.fresh()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def describe(source: Path) -> str:
    files = [Path(d, f) for d, _, names in os.walk(source) for f in names]
    return f"{len(files)} files, {sum(p.stat().st_size for p in files) / 1e3:.0f} kB"


def main(repeats: int) -> None:
    print(f"examples/pytorch_ddp ({describe(EXAMPLE)}): {timed(EXAMPLE, repeats) * 1e3:.1f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        synthetic = Path(tmp)
        for i in range(200):
            (synthetic / f"f{i}.bin").write_bytes(os.urandom(50_000))
        print(f"synthetic ({describe(synthetic)}): {timed(synthetic, repeats) * 1e3:.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
