"""trainpool's components image as a container: its dependencies built once, this trainpool bound.

On Vertex a trainpool component's task is a container of the components image that
``trainpool publish`` built from the root ``Dockerfile`` (``FROM python:3.11-slim``, then
``pip install -c constraints.txt .``). With a container engine, a local run's task of that
image is a container too, of an image made here from the same recipe with one difference:

- the **dependencies image** is the Dockerfile's base with trainpool's dependencies
  (``[project].dependencies`` of ``pyproject.toml``) installed by pip at the versions of
  ``constraints.txt``, every step run on the engine (:func:`trainpool.emulator.builds.
  engine_builds.build`: the base's offline stand-in where it cannot be pulled). It is built
  once per base, dependencies and constraints (its tag is their hash), and kept;
- **trainpool itself** is the checkout the emulator runs from, bound read-only into the
  container at :data:`SOURCE_MOUNT` and first on ``PYTHONPATH``. So an edit to a component
  runs at once, as in a sandbox, with no new ``trainpool publish`` (which a run's YAML asks
  for only when its compiled source changes: ``trainpool compile --check``).

The task's log says which image ran and what was bound. Without a checkout (trainpool
installed from a wheel: no ``pyproject.toml`` or ``constraints.txt`` beside it) there is no
recipe to build from, and the task runs in its sandbox, saying why.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import threading
from dataclasses import dataclass
from pathlib import Path

import trainpool
from trainpool.emulator.builds import engine_builds
from trainpool.emulator.jobs.container_specs import EngineImage
from trainpool.emulator.jobs.containers import ContainerEngine
from trainpool.home import Home, locked
from trainpool.images import image_config

REPOSITORY = "trainpool.local/components-deps"
"""Where the dependencies images are tagged (``REPOSITORY:<hash of the recipe>``)."""
LABEL = "org.trainpool.components-deps"
"""The label that names the checkout's recipe an image was built from."""
SOURCE_MOUNT = "/opt/trainpool/source"
"""Where this checkout's ``trainpool`` package is bound (``SOURCE_MOUNT/trainpool``)."""


class NoRecipe(Exception):
    """trainpool runs from no checkout: no ``Dockerfile``, ``pyproject.toml`` and
    ``constraints.txt`` beside its package to build the dependencies image from."""


@dataclass(frozen=True)
class Recipe:
    """What the dependencies image is made of: the root Dockerfile's ``base``, trainpool's
    ``requirements`` and the ``constraints`` text, and the ``source`` folder of the package."""

    base: str
    requirements: tuple[str, ...]
    constraints: str
    source: Path

    @property
    def tag(self) -> str:
        digest = hashlib.sha256(
            "\0".join((self.base, "\n".join(self.requirements), self.constraints)).encode()
        ).hexdigest()
        return f"{REPOSITORY}:{digest[:16]}"

    def dockerfile(self) -> str:
        return (
            "# trainpool's components image without trainpool: the root Dockerfile's base and\n"
            "# trainpool's dependencies at the versions of constraints.txt. The emulator binds\n"
            f"# the checkout's trainpool at {SOURCE_MOUNT} (trainpool.emulator.pipeline_jobs."
            "components_image).\n"
            f"FROM {self.base}\n"
            "COPY constraints.txt requirements.txt /opt/trainpool/\n"
            "RUN python3 -m pip install --no-cache-dir -c /opt/trainpool/constraints.txt"
            " -r /opt/trainpool/requirements.txt\n"
            f'LABEL {LABEL}="{self.tag}"\n'
        )

    def context(self) -> bytes:
        """The build's gzipped context: the Dockerfile, requirements and constraints."""
        files = {
            "Dockerfile": self.dockerfile(),
            "requirements.txt": "".join(f"{r}\n" for r in self.requirements),
            "constraints.txt": self.constraints,
        }
        data = io.BytesIO()
        with tarfile.open(fileobj=data, mode="w:gz") as tar:
            for name, text in files.items():
                body = text.encode()
                info = tarfile.TarInfo(name)
                info.size = len(body)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(body))
        return data.getvalue()


def recipe(source: Path | None = None) -> Recipe:
    """The recipe of the checkout holding the ``trainpool`` package at ``source`` (default:
    the one this emulator runs). Raises :class:`NoRecipe`."""
    package = (source or Path(trainpool.__file__).resolve().parent).resolve()
    project = package.parent
    needed = [project / name for name in ("Dockerfile", "pyproject.toml", "constraints.txt")]
    missing = [p.name for p in needed if not p.is_file()]
    if missing:
        raise NoRecipe(
            f"trainpool runs from {package}, with no {', '.join(missing)} beside it (not a "
            "checkout): the components image's dependencies cannot be built here"
        )
    bases = image_config.base_images(needed[0].read_text())
    if not bases:
        raise NoRecipe(f"{needed[0]} has no FROM")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    requirements = tomllib.loads(needed[1].read_text())["project"]["dependencies"]
    return Recipe(bases[-1], tuple(requirements), needed[2].read_text(), project)


_LOCK = threading.Lock()


def ensure(engine: ContainerEngine, home: Home, found: Recipe, log: io.TextIOBase) -> EngineImage:
    """The dependencies image of ``found`` on ``engine``: the one it has, else built now (its
    steps' output in ``log``), once across this machine's runs. Raises
    :class:`trainpool.emulator.builds.engine_builds.BuildFailed` and ``OSError``."""
    with _LOCK, locked(home.root / "locks" / "components-deps"):
        image = engine.image(found.tag)
        if image is not None:
            return image
        log.write(
            f"{found.tag}: building trainpool's components image's dependencies on "
            f"{engine.describe} (once: FROM {found.base}, {len(found.requirements)} "
            "requirements at constraints.txt's versions)\n"
        )
        log.flush()
        image_id = engine_builds.build(engine, found.context(), {}, log)
        repository, _, tag = found.tag.rpartition(":")
        engine.client.images.get(image_id).tag(repository, tag)
        image = engine.image(found.tag)
        if image is None:
            raise OSError(f"{engine.describe} lost {found.tag} as it was built")
        return image
