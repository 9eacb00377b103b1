"""First build versus cached rebuild of the PyTorch example, with the local image store.

Run: python3 benchmarks/bench_build.py [REPEATS]
Each repeat uses a fresh store: the first build digests the context, snapshots it and
makes the image's virtualenv (pip over the host's packages); the rebuild only digests
the context and finds the image.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from trainpool.images.service import build_image

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "pytorch_ddp"


def timed(root: Path) -> tuple[float, bool]:
    start = time.perf_counter()
    result = build_image(str(EXAMPLE), backend="local", root=root, log=lambda _: None).to_dict()
    return time.perf_counter() - start, bool(result["cached"])


def main(repeats: int) -> None:
    firsts, rebuilds = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            first, cached_first = timed(Path(tmp))
            again, cached_again = timed(Path(tmp))
            assert (cached_first, cached_again) == (False, True)
            firsts.append(first)
            rebuilds.append(again)
    print(f"PyTorch example, local image store, {repeats} runs (median):")
    print(f"  first build:     {statistics.median(firsts) * 1000:8.1f} ms")
    print(f"  cached rebuild:  {statistics.median(rebuilds) * 1000:8.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
