"""The local backends: the local image store (what the emulator runs), or a Docker engine.

Local builds go to the store unless the Docker backend is asked for by name: the
emulator runs images from the store, and an image in a Docker engine is one it
cannot find, however many engines answer ``docker info``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from trainpool.images import image_store
from trainpool.images.context import BuildContext

STORE_NOTE = (
    "local image store: only `pip install -r` of the image's requirements ran, in a "
    "virtualenv over this machine's packages; RUN steps NOT executed: {runs}"
)


def docker_reachable() -> bool:
    """Whether a ``docker`` CLI is installed and its engine answers."""
    if shutil.which("docker") is None:
        return False
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


REPLACED_NOTE = (
    "the stored image ctx-{digest} was not its context any more ({why}): replaced by a fresh build"
)


class StoreBackend:
    """Images in ``<root>/images/``, run by the emulator as local processes."""

    name = "local-store"

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._replaced: dict[str, str] = {}

    def find(self, image: str, digest: str) -> str | None:
        if not image_store.has(self.root, digest):
            return None
        why = image_store.check(self.root, digest)
        if why is not None:
            self._replaced[digest] = why
            return None
        image_store.tag(self.root, image, digest)
        return f"{image}@sha256:{digest}"

    def tag(self, image: str, digest: str, name: str) -> None:
        image_store.tag(self.root, name, digest)

    def build(self, context: BuildContext, image: str) -> tuple[str, list[str]]:
        runs = image_store.add(context, self.root, [image])
        notes = [STORE_NOTE.format(runs="; ".join(runs) if runs else "none")]
        why = self._replaced.pop(context.digest, None)
        if why is not None:
            notes.insert(0, REPLACED_NOTE.format(digest=context.digest[:20], why=why))
        return f"{image}@sha256:{context.digest}", notes


class DockerBackend:
    """``docker build`` on the local engine; the image keeps its content tag."""

    name = "docker"

    def _image_id(self, image: str) -> str | None:
        done = subprocess.run(
            ["docker", "image", "inspect", "--format", "{{.Id}}", image],
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip() or None if done.returncode == 0 else None

    def find(self, image: str, digest: str) -> str | None:
        image_id = self._image_id(image)
        return f"{image}@{image_id}" if image_id else None

    def tag(self, image: str, digest: str, name: str) -> None:
        subprocess.run(["docker", "tag", image.partition("@")[0], name], check=True)

    def build(self, context: BuildContext, image: str) -> tuple[str, list[str]]:
        with tempfile.TemporaryDirectory() as tmp:
            context.stage(Path(tmp))
            args = [f"--build-arg={k}={v}" for k, v in sorted(context.build_args.items())]
            subprocess.run(["docker", "build", "-t", image, *args, tmp], check=True)
        return f"{image}@{self._image_id(image)}", []


def docker_backend() -> DockerBackend:
    """The Docker engine; ValueError when none answers ``docker info``."""
    if not docker_reachable():
        raise ValueError(
            "backend: 'docker' but no Docker engine answers `docker info`; "
            "accepted: a running engine, or backend 'local' (the local image store)"
        )
    return DockerBackend()
