"""Cloud Build's builds when the emulator's store has no room, over gRPC with the official
``CloudBuildClient`` (the local image store's builder: no container engine).

A build whose image the disk cannot hold ends FAILURE (Cloud Build's ``Build.Status`` for a
build that failed; it has no RESOURCE_EXHAUSTED), its ``status_detail`` naming the disk,
never WORKING forever, and leaves nothing half written in the image store; a CreateBuild on
a full disk answers RESOURCE_EXHAUSTED and stores nothing; with room again a build succeeds
without a restart. The store sits on a small tmpfs of its own (root only).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.disks import fill, tmpfs
from fixtures.storage import storage_emulator
from google.api_core import exceptions
from google.cloud.devtools.cloudbuild_v1 import types

import trainpool.emulator as emulator
from trainpool.images import image_store
from trainpool.images.cloud_build import CloudBuildBackend, build_request, cloud_build_client
from trainpool.images.context import BuildContext, collect

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("no_container_engine")]
PROJECT = "demo"
BUCKET = "demo_cloudbuild"
REPO = "us-central1-docker.pkg.dev/demo/trainpool/big"
Status = types.Build.Status


@pytest.fixture
def twenty_mb(tmp_path: Path) -> Iterator[Path]:
    yield from tmpfs(tmp_path / "disk", "20M")


def context(folder: Path, megabytes: int) -> BuildContext:
    """A trainer's context with ``megabytes`` of weights that do not compress."""
    folder.mkdir()
    (folder / "train.py").write_text("print('trained')\n")
    (folder / "Dockerfile").write_text(
        'FROM python:3.11\nCOPY . /app\nWORKDIR /app\nENTRYPOINT ["python", "train.py"]\n'
    )
    (folder / "weights.bin").write_bytes(os.urandom(megabytes << 20))
    return BuildContext.of(collect(folder))


def build(name: str, source: BuildContext) -> types.Build:
    """Upload ``source``, create its build pushing ``REPO:name``, wait for its end."""
    obj = CloudBuildBackend(PROJECT, log=lambda _: None).upload(source)
    client = cloud_build_client()
    made = client.create_build(
        project_id=PROJECT, build=build_request(f"{REPO}:{name}", BUCKET, obj, {})
    ).metadata.build
    deadline = time.monotonic() + 60
    while (got := client.get_build(project_id=PROJECT, id=made.id)).status in (
        Status.QUEUED,
        Status.WORKING,
    ):
        assert time.monotonic() < deadline, got
        time.sleep(0.1)
    return got


def leftovers(root: Path) -> list[str]:
    """What the image store holds besides whole images (a staging folder, a half image)."""
    images = image_store.images_dir(root)
    if not images.exists():
        return []
    return sorted(
        p.name for p in images.iterdir() if p.name != "locks" and not (p / "image.json").exists()
    )


def test_a_build_the_disk_cannot_hold_fails_naming_it_and_leaves_nothing_half_written(
    twenty_mb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = twenty_mb / "root"
    with storage_emulator(monkeypatch, BUCKET), emulator.start(root) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        big = build("big", context(tmp_path / "big", 30))
        assert big.status == Status.FAILURE, big
        assert big.status_detail.startswith(
            f"No space left on the disk of the emulator's store {root}"
        ), big.status_detail
        assert leftovers(root) == []
        assert image_store.lookup(f"{REPO}:big", root) is None  # nothing pushed
        small = build("small", context(tmp_path / "small", 1))  # its room came back with it
        assert small.status == Status.SUCCESS, small.status_detail
        assert image_store.lookup(f"{REPO}:small", root) is not None
        filler = fill(twenty_mb)
        before = cloud_build_client().list_builds(project_id=PROJECT)
        builds_dir = root / "builds"
        folders = sorted(p.name for p in builds_dir.iterdir())
        with pytest.raises(exceptions.ResourceExhausted, match=str(root)):
            build("refused", context(tmp_path / "refused", 0))
        after = cloud_build_client().list_builds(project_id=PROJECT)
        assert [b.id for b in after] == [b.id for b in before]
        assert sorted(p.name for p in builds_dir.iterdir()) == folders  # no log left behind
        filler.unlink()
        again = build("again", context(tmp_path / "again", 0))
        assert again.status == Status.SUCCESS, again.status_detail
    with storage_emulator(monkeypatch, BUCKET), emulator.start(root) as emu:  # intact
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = cloud_build_client()
        assert client.get_build(project_id=PROJECT, id=big.id).status == Status.FAILURE
        assert client.get_build(project_id=PROJECT, id=again.id).status == Status.SUCCESS
