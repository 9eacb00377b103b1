"""build_image run by kfp.local from its compiled YAML, with the local image store."""

from __future__ import annotations

from pathlib import Path

import pytest
from kfp import components, local

from trainpool.images import image_store

SPEC = Path(__file__).resolve().parents[1] / "component_specs" / "build_image.yaml"

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True)
def local_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINPOOL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("VERTEX_AI_EMULATOR_HOST", raising=False)
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(tmp_path / "root"))


def test_builds_into_the_local_image_store_then_skips(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "trainer").mkdir(parents=True)
    (src / "trainer" / "__init__.py").write_text("")
    (src / "trainer" / "task.py").write_text("from trainpool import runtime\n")
    build_image = components.load_component_from_file(str(SPEC))
    where = {"project": "demo", "location": "us-central1"}  # kfp.local has no run to take them from
    first = build_image(
        source_dir=str(src), image_uri="local/demo", backend="local", **where
    ).outputs
    second = build_image(
        source_dir=str(src), image_uri="local/demo", backend="local", **where
    ).outputs
    assert (first["cached"], second["cached"]) == (False, True)
    assert first["image_uri"] == second["image_uri"]
    assert first["image_uri"].startswith("local/demo:ctx-")
    image = image_store.lookup(first["image_uri"], tmp_path / "home")
    assert image is not None
    assert image.argv() == [str(image.python), "-m", "trainer.task"]
    assert (image.context_dir / "trainpool" / "runtime" / "__init__.py").is_file()


def test_given_image_without_source_is_passed_through() -> None:
    build_image = components.load_component_from_file(str(SPEC))
    outputs = build_image(
        source_dir="", image_uri="us-docker.pkg.dev/p/r/t:v1", project="p", location="us-central1"
    ).outputs
    assert outputs == {"image_uri": "us-docker.pkg.dev/p/r/t:v1", "cached": True}
