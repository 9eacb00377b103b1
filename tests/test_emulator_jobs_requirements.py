"""A trainer package's requirements resolved as its image's framework is (jobs/requirements.py).

Google's distributed-training notebook (vertex-ai-samples,
notebooks/official/training/get_started_with_vertex_distributed_training.ipynb) pins
``tensorflow==2.8.0`` and ``tensorflow_datasets==1.3.0`` for tf-cpu.2-8; on Vertex the first
is the image's own TensorFlow. The runs: tests/test_emulator_jobs_packages.py and
tests/test_google_samples.py.
"""

from __future__ import annotations

from packaging.requirements import Requirement

from trainpool.emulator.jobs import requirements


def reqs(*texts: str) -> list[Requirement]:
    return [Requirement(text) for text in texts]


def test_the_framework_a_stand_in_holds_meets_its_requirement_whatever_version() -> None:
    asked = reqs("tensorflow==2.8.0", "tensorflow_datasets==1.3.0")
    resolved = requirements.stand_ins(asked, {"tensorflow": "2.12.1"}, "tensorflow-cpu 2.12.1")
    assert resolved.install == ["tensorflow_datasets==1.3.0"]
    assert resolved.notes == [
        "  tensorflow==2.8.0 (asked): tensorflow-cpu 2.12.1 of the image's stand-in stands in "
        "for it, as for the image's own framework"
    ]
    assert resolved.changed == set()


def test_torch_is_always_the_cpu_build_of_this_machine() -> None:
    resolved = requirements.stand_ins(reqs("torch==1.13.1", "numpy"), {}, "")
    assert resolved.install == ["torch==2.13.0", "numpy"]
    assert resolved.changed == {"torch==2.13.0"}
    assert resolved.notes[0].startswith("  torch==1.13.1 (asked): torch 2.13.0, the CPU build")


def test_the_version_a_requirement_aims_at_is_its_highest_named() -> None:
    assert requirements._wanted(Requirement("a==1.3.0")) == "1.3.0"
    assert requirements._wanted(Requirement("a>=1.2,<2.0")) == "2.0"
    assert requirements._wanted(Requirement("a~=1.4.2")) == "1.4.2"
    assert requirements._wanted(Requirement("a")) is None
