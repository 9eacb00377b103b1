"""The local backends: the emulator's container engine, the local image store, or a Docker engine.

A local build goes where the emulator runs it from: to the emulator's container engine when
it has one (:class:`EngineBackend`: a real ``docker build``, every RUN step run, and the
job's replicas are then containers of the image), else to the local image store
(:class:`StoreBackend`: the emulator imitates the image with processes). The Docker backend
asked for by name (``backend="docker"``) builds with the ``docker`` command, for an engine
the emulator does not use.
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


class EngineBackend:
    """The emulator's container engine (``Local.Engine``: :func:`trainpool.emulator_client.
    registry.engine_call`): the context built as Cloud Build builds on the engine, the image
    kept there with its content tag (``REPO:ctx-DIGEST``) and named by its id
    (``REPO:ctx-DIGEST@sha256:ID``). A base the engine cannot have (not pullable, no
    stand-in) makes the build the local image store's, saying so, as Cloud Build's does."""

    name = "container-engine"

    def __init__(self, address: str, root: Path, describe: str) -> None:
        self.address = address
        self.store = StoreBackend(root)
        self.describe = describe

    def find(self, image: str, digest: str) -> str | None:
        from trainpool.emulator_client.registry import engine_call

        found = engine_call(self.address, "has", image=image).get("id", "")
        return f"{image}@{found}" if found else None

    def tag(self, image: str, digest: str, name: str) -> None:
        from trainpool.emulator_client.registry import engine_call

        if "@sha256:" in image and not image.split("@", 1)[1] == f"sha256:{digest}":
            engine_call(self.address, "tag", image=image.partition("@")[0], name=name)
        else:  # built into the store instead
            self.store.tag(image, digest, name)

    def build(self, context: BuildContext, image: str) -> tuple[str, list[str]]:
        import grpc

        from trainpool.emulator_client.registry import engine_call

        # the emulator reads the tarball at its path: the store's own folder, else (a task in
        # a container, where the store is read-only) TMPDIR, which its launcher sets to a
        # folder bound at the same path (trainpool.emulator.pipeline_jobs.task_containers)
        folder = self.store.root / "tmp"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            handle = tempfile.NamedTemporaryFile(dir=folder, suffix=".tar.gz")  # noqa: SIM115
        except OSError:
            handle = tempfile.NamedTemporaryFile(suffix=".tar.gz")  # noqa: SIM115
        with handle:
            with open(handle.name, "wb") as out:
                context.write_tarball(out)
            try:
                built = engine_call(
                    self.address,
                    "build",
                    timeout_s=3600.0,
                    context=handle.name,
                    image=image,
                    build_args=dict(context.build_args),
                )
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.FAILED_PRECONDITION:
                    raise RuntimeError(
                        f"{image}: the build failed on {self.describe}: {err.details()}"
                    ) from None
                uri, notes = self.store.build(context, image)
                said = f"{err.details()}: built into the local image store instead"
                return uri, [said, *notes]
        notes = [
            f"built on {self.describe}: every step run; the job's replicas are containers of it"
        ]
        notes += [line for line in built.get("log", "").splitlines() if line.startswith("FROM ")]
        return f"{image}@{built['id']}", notes


def local_backend(root: Path) -> StoreBackend | EngineBackend:
    """Where a local build goes: the container engine of the emulator at
    ``VERTEX_AI_EMULATOR_HOST`` when it answers and has one, else the local image store."""
    from trainpool.config import emulator_host

    address = emulator_host()
    if address:
        from trainpool.emulator_client.registry import engine_call

        try:
            engine = engine_call(address, "describe", timeout_s=10.0).get("engine", "")
        except Exception:  # noqa: BLE001 - an emulator that does not answer: the store
            engine = ""
        if engine:
            return EngineBackend(address, root, engine)
    return StoreBackend(root)


def docker_backend() -> DockerBackend:
    """The Docker engine; ValueError when none answers ``docker info``."""
    if not docker_reachable():
        raise ValueError(
            "backend: 'docker' but no Docker engine answers `docker info`; "
            "accepted: a running engine, or backend 'local' (the local image store)"
        )
    return DockerBackend()
