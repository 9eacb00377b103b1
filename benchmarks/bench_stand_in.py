"""A stand-in image's first build, from nothing: its time and its size.

Run: ``python3 benchmarks/bench_stand_in.py`` (as root, with Debian's ``dockerd`` and
``mmdebstrap``: ``scripts/engine`` installs them; needs the package index).

A throwaway engine of its own (``tests/fixtures/engine.py``'s ``SecondEngine``: its own
socket, folders and bridge, removed at the end) starts empty, so every build is a first one
and the shared engine is not touched. In it, in order, each timed from the call to the
image tagged:

- ``python:3.11-slim`` and ``python:3.9-slim``: Debian bookworm's and bullseye's minbase with
  Python, made by ``mmdebstrap`` and ``docker import`` (:mod:`trainpool.emulator.jobs.
  debian_bases`), trusting this machine's CA bundle;
- ``gcr.io/deeplearning-platform-release/tf2-gpu.2-8``: TensorFlow 2.8 on the 3.9 stand-in,
  pandas, gcsfs, google-cloud-storage, installed from the package index
  (:mod:`trainpool.emulator.stand_ins.prebuilt_bases`);
- ``us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8:latest`` right after it: the same
  TensorFlow, so its package-index layer comes from the engine's build cache; only
  cloudml-hypertune is installed (the first build of a second image of one framework);
- ``us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest``: torch 2.13.0 (this
  machine's CPU wheel) on the 3.11 stand-in, with the page's pandas and scikit-learn series;
- ``gcr.io/ml-pipeline/google-cloud-pipeline-components:2.22.0``: GCPC 2.22.0 and what it
  requires (kfp, the Vertex AI SDK) on the 3.11 stand-in.

Prints a table: image, seconds, size (the engine's ``Size``: the image's own layers and
its base's).
"""

from __future__ import annotations

import io
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.engine import SecondEngine  # noqa: E402

from trainpool.emulator.stand_ins import debian_bases, prebuilt_bases  # noqa: E402

PREBUILT = (
    "gcr.io/deeplearning-platform-release/tf2-gpu.2-8",
    "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8:latest",
    "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest",
    "gcr.io/ml-pipeline/google-cloud-pipeline-components:2.22.0",
)


def main() -> None:
    engine = SecondEngine(storage_driver="overlay2")  # as the shared engine stores images
    rows: list[tuple[str, float, int]] = []
    try:
        client = engine.start()
        for name in ("python:3.11-slim", "python:3.9-slim"):
            started = time.perf_counter()
            image = debian_bases.ensure(client, name, environ=os.environ)
            rows.append((name, time.perf_counter() - started, int(image.attrs["Size"])))
            print(f"{name}: {rows[-1][1]:.0f} s", flush=True)
        for name in PREBUILT:
            recipe = prebuilt_bases.recipe(name)
            assert recipe is not None, name
            started = time.perf_counter()
            image = prebuilt_bases.ensure(client, recipe, io.StringIO())
            rows.append((name, time.perf_counter() - started, int(image.attrs["Size"])))
            print(f"{name}: {rows[-1][1]:.0f} s", flush=True)
    finally:
        engine.close()
    print()
    print(f"{'stand-in':70} {'first build':>12} {'size':>10}")
    for name, seconds, size in rows:
        print(f"{name:70} {seconds:>10.0f} s {size / 1e9:>8.2f} GB")


if __name__ == "__main__":
    main()
