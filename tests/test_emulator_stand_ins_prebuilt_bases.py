"""The recipes of the container stand-ins of Google's images (``stand_ins/prebuilt_bases.py``),
read without an engine: what each holds, and the Dockerfile that makes it.

Facts they follow: TensorFlow 2.8 publishes wheels for CPython 3.7 to 3.10 (PyPI's
tensorflow-cpu 2.8.4 files), so its images' stand-ins get Debian bullseye's 3.9; NumPy 2 came
after TensorFlow 2.8 (its wheels were built against NumPy 1); PyTorch's CPU build is this
machine's torch 2.13.0 for CPython 3.11.
"""

from __future__ import annotations

from trainpool.emulator.stand_ins import prebuilt_bases

DLC = "gcr.io/deeplearning-platform-release/tf2-gpu.2-8"
VERTEX = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8:latest"
TORCH = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"


def steps(name: str) -> list[str]:
    found = prebuilt_bases.recipe(name)
    assert found is not None, name
    return prebuilt_bases.dockerfile(found).splitlines()


def test_tensorflow_2_8_gets_python_3_9_its_cpu_build_and_numpy_1() -> None:
    for name in (DLC, VERTEX):
        found = prebuilt_bases.recipe(name)
        assert found is not None
        assert found.python == "3.9" and found.base == "python:3.9-slim"
        assert found.requirements[:2] == ("tensorflow-cpu==2.8.*", "numpy<2")
        assert {"pandas", "gcsfs", "google-cloud-storage"} <= set(found.requirements)
    # Vertex's training images hold cloudml-hypertune (the process stand-ins do too); the
    # Deep Learning Containers do not
    assert prebuilt_bases.recipe(VERTEX).source_only == ("cloudml-hypertune",)  # type: ignore[union-attr]
    assert prebuilt_bases.recipe(DLC).source_only == ()  # type: ignore[union-attr]


def test_two_images_of_one_tensorflow_share_the_package_index_step() -> None:
    # the index step comes first, alone, before anything of this machine is copied: the
    # engine's build cache then makes the second image's layer from the first's
    dlc, vertex = steps(DLC), steps(VERTEX)
    assert dlc[0] == vertex[0] == "FROM trainpool.local/stand-in/python:3.9-slim"
    assert dlc[1] == vertex[1] and dlc[1].startswith("RUN pip install -q --no-cache-dir ")
    assert "'tensorflow-cpu==2.8.*'" in dlc[1] and "COPY" not in "".join(dlc)
    assert vertex[2:4] == [
        "COPY wheels /tmp/wheels",
        "RUN pip install -q --no-cache-dir --find-links /tmp/wheels 'cloudml-hypertune'"
        " && rm -rf /tmp/wheels",
    ]
    assert dlc[-2] == f'LABEL org.trainpool.stand-in="{DLC}"'


def test_pytorch_comes_from_this_machines_wheels() -> None:
    torch = steps(TORCH)
    assert torch[0] == "FROM trainpool.local/stand-in/python:3.11-slim"
    assert torch[1] == "COPY wheels /tmp/wheels"
    assert torch[2].startswith("RUN pip install -q --no-cache-dir --find-links /tmp/wheels ")
    assert "'torch==2.13.0'" in torch[2]


def test_any_other_image_has_no_recipe() -> None:
    for name in ("python:3.11-slim", "nvcr.io/nvidia/pytorch:24.01-py3", "img:1"):
        assert prebuilt_bases.recipe(name) is None
