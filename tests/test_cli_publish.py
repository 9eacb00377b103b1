"""`trainpool publish`: the components image built, pushed, recorded, and compiled in by digest."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.storage import storage_emulator

import trainpool.emulator as emulator
from trainpool.emulator.jobs import containers

pytestmark = pytest.mark.timeout(180)
ROOT = Path(__file__).resolve().parents[1]
CLI = "from trainpool.cli import main; main()"
PROJECT_FILES = ("pyproject.toml", "Dockerfile", ".dockerignore", "constraints.txt")
PROJECT_DIRS = ("trainpool", "components", "pipelines", "component_specs")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of this checkout's sources: publish rewrites the YAML and its record there."""
    copy = tmp_path / "project"
    copy.mkdir()
    for name in PROJECT_FILES:
        shutil.copy2(ROOT / name, copy / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in PROJECT_DIRS:
        shutil.copytree(ROOT / name, copy / name, ignore=ignore)
    return copy


def trainpool(project: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", CLI, *args],
        cwd=project,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def images(project: Path) -> set[str]:
    found: set[str] = set()
    for path in [*project.glob("component_specs/*.yaml"), *project.glob("pipelines/*.yaml")]:
        found |= set(re.findall(r"^\s+image: (\S+)$", path.read_text(), flags=re.M))
    return found


def test_local_publish_names_the_image_by_digest_and_check_sees_new_sources(
    project: Path, tmp_path: Path
) -> None:
    out = trainpool(project, "publish", "--local", "--root", str(tmp_path / "store"))
    record = json.loads((project / "components-image.json").read_text())
    digest = record["contextDigest"].removeprefix("sha256:")
    assert record["image"] == f"local/trainpool-components:ctx-{digest[:20]}@sha256:{digest}"
    assert f"published {record['image']} (local-store)" in out
    assert images(project) == {record["image"]}
    assert "up to date" in trainpool(project, "compile", "--check")
    (project / "trainpool" / "config.py").write_text(
        (project / "trainpool" / "config.py").read_text() + "\n# a change\n"
    )
    done = check(project)
    assert done.returncode == 1
    assert "components-image.json (the components image was published from sources" in done.stderr


def check(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI, "compile", "--check"],
        cwd=project,
        capture_output=True,
        text=True,
    )


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_an_edit_outside_what_the_components_import_needs_no_publish(
    project: Path, tmp_path: Path
) -> None:
    """The components image holds what the components import: an edit to the emulator, the
    CLI, kfp.local's runner or the redirect leaves the image, its record and the YAML fresh;
    a component importing one more module does not."""
    out = trainpool(project, "publish", "--local", "--root", str(tmp_path / "store"))
    assert re.search(r"the image carries (\d+) of trainpool's (\d+) modules", out), out
    generated = {
        p: p.read_bytes()
        for p in [project / ".dockerignore", project / "components-image.json"]
        + sorted(project.glob("component_specs/*.yaml"))
        + sorted(project.glob("pipelines/*.yaml"))
    }
    for module in (
        "emulator/server.py",
        "cli/__init__.py",
        "kfp_local/__init__.py",
        "redirect/__init__.py",
        "compiling.py",
    ):
        append(project / "trainpool" / module, "\n# an edit\n")
    done = check(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "up to date" in done.stdout
    assert {p: p.read_bytes() for p in generated} == generated  # the check writes nothing
    append(
        project / "components" / "plan_cluster.py",
        "\ndef _more():\n    import trainpool.kfp_local\n",
    )
    done = check(project)
    assert done.returncode == 1
    assert ".dockerignore (the components image's context is not what the components import" in (
        done.stderr
    )


@pytest.fixture
def cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The emulator's Cloud Build and a storage emulator with the build bucket. Its builds are
    the local image store's (no container engine): a real build of the components image
    installs every dependency from the package index inside a container, which reaches it
    here only through the TLS-intercepting proxy that a stand-in base does not trust."""
    monkeypatch.setenv(containers.SWITCH_ENV, "off")
    with storage_emulator(monkeypatch, "demo_cloudbuild") as url:
        with emulator.start(tmp_path / "emu") as emu:
            yield {"VERTEX_AI_EMULATOR_HOST": emu.address, "STORAGE_EMULATOR_HOST": url}


def test_cloud_publish_pushes_to_artifact_registry_and_compiles_against_the_digest(
    project: Path, cloud: dict[str, str]
) -> None:
    args = ["publish", "--project", "demo", "--location", "europe-west4", "--repository", "ml"]
    out = trainpool(project, *args, env=cloud)
    image = json.loads((project / "components-image.json").read_text())["image"]
    assert re.fullmatch(
        r"europe-west4-docker\.pkg\.dev/demo/ml/components:ctx-[0-9a-f]{20}@sha256:[0-9a-f]{64}",
        image,
    ), image
    assert f"published {image} (cloud-build)" in out
    assert images(project) == {image}
