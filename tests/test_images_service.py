"""The backend choice with a Docker engine present: local runs use the store unless asked."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from trainpool.images import image_store
from trainpool.images.service import build_image

STAND_IN = """#!/bin/sh
echo "$@" >> "{calls}"
case "$1" in
  info) exit 0 ;;
  image) grep -q "^build" "{calls}" || exit 1; echo sha256:feedface; exit 0 ;;
  build) exit 0 ;;
  tag) exit 0 ;;
esac
exit 1
"""


@pytest.fixture
def docker_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `docker` that answers `docker info` (an engine "runs") and records every call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "docker-calls"
    docker = bin_dir / "docker"
    docker.write_text(STAND_IN.format(calls=calls))
    docker.chmod(docker.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("VERTEX_AI_EMULATOR_HOST", raising=False)
    return calls


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    folder = tmp_path / "trainer"
    folder.mkdir()
    (folder / "task.py").write_text("print('hi')\n")
    (folder / "Dockerfile").write_text(
        'FROM python:3.11\nCOPY . /app\nCMD ["python", "/app/task.py"]\n'
    )
    return folder


@pytest.mark.parametrize("backend", ["auto", "local"])
def test_with_docker_running_a_local_build_goes_to_the_store_the_emulator_runs(
    docker_on_path: Path, trainer: Path, tmp_path: Path, backend: str
) -> None:
    result = build_image(trainer, backend=backend, root=tmp_path / "root", log=lambda _: None)
    assert result.backend == "local-store"
    assert image_store.lookup(result.image_uri, tmp_path / "root") is not None
    assert not docker_on_path.exists() or "build" not in docker_on_path.read_text()


def test_docker_is_used_when_asked_for_by_name(
    docker_on_path: Path, trainer: Path, tmp_path: Path
) -> None:
    result = build_image(trainer, backend="docker", root=tmp_path / "root", log=lambda _: None)
    assert result.backend == "docker"
    assert result.image_uri.endswith("@sha256:feedface")
    calls = docker_on_path.read_text().splitlines()
    assert calls[0] == "info" and any(c.startswith("build -t local/trainer:ctx-") for c in calls)
    assert not (tmp_path / "root" / "images").exists()


def test_docker_without_an_engine_is_refused_naming_the_backend(
    trainer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(ValueError, match="backend: 'docker' but no Docker engine answers"):
        build_image(trainer, backend="docker", root=tmp_path / "root", log=lambda _: None)


def test_image_repo_tag_is_tagged_in_the_store_and_by_docker(
    docker_on_path: Path, trainer: Path, tmp_path: Path
) -> None:
    local = build_image(
        trainer, image_uri="local/demo:latest", root=tmp_path / "root", log=lambda _: None
    )
    assert local.image_uri == f"local/demo:latest@sha256:{local.digest}"
    assert image_store.lookup("local/demo:latest", tmp_path / "root") is not None
    docker = build_image(
        trainer,
        image_uri="local/demo:v2",
        backend="docker",
        root=tmp_path / "r2",
        log=lambda _: None,
    )
    assert docker.image_uri == "local/demo:v2@sha256:feedface"
    assert f"tag local/demo:ctx-{docker.digest[:20]} local/demo:v2" in docker_on_path.read_text()


def test_a_tag_with_cloud_build_is_refused_before_anything_is_built(
    trainer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VERTEX_AI_EMULATOR_HOST", raising=False)
    with pytest.raises(ValueError, match="accepted with Cloud Build: the repository only"):
        build_image(
            trainer,
            image_uri="us-docker.pkg.dev/p/r/t:latest",
            backend="cloud",
            project="p",
            log=lambda _: None,
        )
