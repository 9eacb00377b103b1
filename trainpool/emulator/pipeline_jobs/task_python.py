"""The Python a pipeline task's image stands for here: its site directories, read-only.

On Vertex AI Pipelines a task runs in its component's image (``base_image`` of a
lightweight component, ``image`` of a container component): a ``python:3.11`` task has a
clean Python and installs kfp and its ``packages_to_install`` when it starts (kfp's
bootstrap, :mod:`.task_packages`); a prebuilt image has its framework. Locally each image
has a stand-in, the same ones replicas of jobs get (:mod:`trainpool.emulator.jobs.launches`):

- a prebuilt training image: its stand-in virtualenv
  (:mod:`trainpool.emulator.stand_ins.virtualenvs`);
- an image of the local image store: its Python environment, files and ``ENV``;
- trainpool's components image (``trainpool.config.COMPONENTS_IMAGE``, or a
  ``*/trainpool-components`` image the store does not hold): this emulator's own packages
  with the trainpool it runs from first, what the image is built to hold;
- GCPC's image (``gcr.io/ml-pipeline/google-cloud-pipeline-components``), and any task that
  runs a GCPC launcher: this emulator's own packages, which hold GCPC and the Vertex AI SDK;
- any other image (``python:3.11``, ...): this machine's clean Python (its standard library,
  pip and setuptools), with a note when the name does not say Python.

Each task runs in a Python of its own over it
(:class:`trainpool.emulator.jobs.replica_python.Layer`),
and the site directories are read-only in its mount namespace: nothing a task installs
reaches the emulator, another task or another run.
"""

from __future__ import annotations

import hashlib
import os
import site
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import trainpool
from trainpool import config
from trainpool.catalog import prebuilt_image
from trainpool.emulator.jobs import replica_python
from trainpool.emulator.stand_ins import virtualenvs
from trainpool.home import Home
from trainpool.images import image_store

GCPC_IMAGE = "gcr.io/ml-pipeline/google-cloud-pipeline-components"
COMPONENTS_REPOSITORY = "trainpool-components"


@dataclass(frozen=True)
class TaskPython:
    """What a task's image stands for: ``sites`` (its Python's site directories, in order),
    ``path`` (directories after the task's own ``bin`` on PATH), ``image_env`` (its ENV),
    ``context`` (files its working directory is a copy of) and ``cwd`` in them, ``aliases``
    (a stand-in framework under the names pip may ask for it by), ``read_only`` (folders the
    task must not change besides the stores) and what it is, in words."""

    what: str
    sites: tuple[Path, ...]
    path: tuple[str, ...] = ()
    image_env: dict[str, str] = field(default_factory=dict)
    context: Path | None = None
    cwd: Path | None = None
    aliases: dict[str, str] = field(default_factory=dict)
    read_only: tuple[Path, ...] = ()


def repository(image: str) -> str:
    """``image`` without its digest and tag."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return name[: len(name) - len(last)] + last.split(":", 1)[0]


def is_components_image(image: str) -> bool:
    """Whether ``image`` is trainpool's components image (by its repository)."""
    found = repository(image)
    return found == repository(config.COMPONENTS_IMAGE) or found.endswith(
        "/" + COMPONENTS_REPOSITORY
    )


def emulator_sites() -> tuple[Path, ...]:
    """The site directories of the Python this emulator runs on."""
    return tuple(Path(p) for p in site.getsitepackages() if Path(p).is_dir())


def trainpool_site(home: Home) -> Path:
    """A site directory holding only the ``trainpool`` this emulator runs from (a link)."""
    source = Path(trainpool.__file__).resolve().parent
    folder = home.stand_ins / "trainpool-source"
    root = folder / hashlib.sha256(str(source).encode()).hexdigest()[:20]
    link = root / "trainpool"
    if not link.is_symlink():
        root.mkdir(parents=True, exist_ok=True)
        aside = root / f".trainpool-{os.getpid()}"
        aside.unlink(missing_ok=True)
        aside.symlink_to(source, target_is_directory=True)
        os.replace(aside, link)
    return root


def _clean(image: str) -> TaskPython:
    wheels = replica_python.bundled_wheels()
    return TaskPython(
        f"{image or 'no image'}: this machine's clean Python {sys.version.split()[0]} "
        f"({replica_python.interpreter()}: its standard library, pip and setuptools)",
        tuple(wheels),
    )


def for_image(home: Home, image: str, kind: str, note: Callable[[str], None]) -> TaskPython:
    """The stand-in of a task's ``image``; ``kind`` is ``"launcher"`` for a GCPC launcher."""
    prebuilt = prebuilt_image(image) if image else None
    if prebuilt is not None and kind != "launcher":
        found = virtualenvs.ensure(home, prebuilt, note, "image")
        return TaskPython(
            f"{image}: the stand-in of the prebuilt image ({found.python.parent.parent.parent})",
            (found.site,),
            (str(found.python.parent),),
            aliases=dict(found.aliases),
        )
    stored = image_store.lookup(image, home.root) if image and kind != "launcher" else None
    if stored is not None:
        venv = stored.python.parent.parent
        return TaskPython(
            f"{image}: the Python environment of the local image ({venv})",
            tuple(replica_python.venv_sites(venv)),
            image_env=dict(stored.env),
            context=stored.context_dir,
            cwd=stored.workdir,
        )
    if kind == "launcher" or repository(image) == GCPC_IMAGE:
        return TaskPython(
            f"{image}: GCPC's image, stood in for by this emulator's own packages (GCPC, the "
            "Vertex AI SDK), read-only",
            emulator_sites(),
        )
    if is_components_image(image):
        source = trainpool_site(home)
        return TaskPython(
            f"{image}: trainpool's components image, stood in for by this emulator's own "
            f"packages with the trainpool it runs ({(source / 'trainpool').resolve()}) first, "
            "read-only",
            (source, *emulator_sites()),
            read_only=((source / "trainpool").resolve(),),
        )
    clean = _clean(image)
    if "python" not in repository(image).rsplit("/", 1)[-1]:
        note(
            f"warning: image {image!r} is neither a prebuilt image, one of the local image "
            "store, trainpool's components image nor a Python image; the task runs in this "
            "machine's clean Python (build it with `trainpool build-image DIR --local` to run "
            "it with its packages)"
        )
    return clean
