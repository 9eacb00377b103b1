"""Each replica's own Python, fresh at every start, over its image's environment kept read-only.

On Vertex every replica is a container started from its image: what it installs
(``pip install``, or ``pip install --user`` as the container's root user) lives in that
container only, and the next start, the next replica and the next job start from the image
again. The SDK relies on it: ``CustomJob.from_local_script`` on an image that is not a
prebuilt one runs ``pip install --upgrade pip && pip3 install -q --user PKG && python3 -m
MODULE`` in the container (googleapis/python-aiplatform ``google/cloud/aiplatform/jobs.py``),
and Vertex's launcher in a prebuilt image installs a ``pythonPackageSpec`` package with
``pip3 install --user``. Locally an image's Python environment is one directory shared by
every replica of every job (a prebuilt image's stand-in, a local image's virtualenv, the
machine's clean Python), and the emulator's own Python is another; a replica may change
neither. So each pool gets:

- a **base** (:func:`make_base`; :func:`shared_base` keeps one per environment for every
  job): a Python prefix made of symbolic links to this machine's interpreter and standard
  library, whose ``site-packages`` holds one ``.pth`` file adding the environment's site
  directories (``site.addsitedir``, so their
  own ``.pth`` files count). None of the emulator's packages is on its path: the prefix is
  not the interpreter's own, whose ``site-packages`` are the emulator's. With no site
  directory given it is the machine's **clean Python**: the standard library, and pip and
  setuptools from the interpreter's own ``ensurepip`` wheels (what ``python -m venv`` would
  install; pip runs from its wheel), as a ``python`` image has them;

and each replica a **layer** (:class:`Layer`), made fresh before every start: a virtual
environment over the base (``pyvenv.cfg``: ``home`` the base's ``bin``,
``include-system-site-packages = true``, PEP 405) with an empty ``site-packages`` and its
own ``python`` and ``pip`` commands. ``pip install`` writes there (pip leaves a package of
the base where it is: "Not uninstalling ..., outside environment"); ``pip install --user``
writes under the replica's HOME (``~/.local``), fresh at every start too, which Python
puts on its path before the environment's packages, as in a container. The stand-ins,
the bases and the job's package environments are bound read-only in the replica's mount
namespace where the machine allows it (:mod:`.gcs_mount`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import site
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trainpool.redirect.files import write_new

VERSION = f"python{sys.version_info.major}.{sys.version_info.minor}"
"""The folder name of this interpreter's library: ``python3.11``."""
BASE_PTH = "_trainpool_environment.pth"
PIP_SCRIPT = """#!{python}
import re
import sys

from pip._internal.cli.main import main

if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main())
"""
"""The ``pip`` command pip itself writes into a virtual environment's ``bin``."""
PIP_NAMES = ("pip", "pip3", f"pip{sys.version_info.major}.{sys.version_info.minor}")
PYTHON_NAMES = ("python", "python3", VERSION)


def interpreter() -> Path:
    """This machine's Python interpreter that the emulator runs on (its virtualenv's base)."""
    return Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))


def stdlib() -> Path:
    """The standard library of :func:`interpreter`."""
    return Path(sysconfig.get_paths()["stdlib"])


def bundled_wheels() -> list[Path]:
    """pip's and setuptools' wheels that come with the interpreter (``ensurepip``), if any."""
    return sorted((stdlib() / "ensurepip" / "_bundled").glob("*.whl"))


def venv_sites(venv: Path) -> list[Path]:
    """The site directories a virtual environment's Python has: its own, then those of the
    interpreter it was made from when ``pyvenv.cfg`` includes them (``--system-site-packages``:
    a local image's environment, made by this interpreter, ``trainpool.images.image_store``)."""
    own = venv / "lib" / VERSION / "site-packages"
    config = (venv / "pyvenv.cfg").read_text() if (venv / "pyvenv.cfg").is_file() else ""
    settings = dict(
        (key.strip().lower(), value.strip())
        for key, _, value in (line.partition("=") for line in config.splitlines())
    )
    if settings.get("include-system-site-packages", "false").lower() != "true":
        return [own]
    return [own, *(Path(found) for found in site.getsitepackages([sys.base_prefix]))]


@dataclass(frozen=True)
class Base:
    """A read-only Python prefix (see the module): ``root/bin/python3.X``, the standard
    library, and ``sites`` on its path."""

    root: Path
    sites: tuple[Path, ...]

    @property
    def python(self) -> Path:
        return self.root / "bin" / VERSION


def make_base(root: Path, sites: Sequence[Path]) -> Base:
    """The base at ``root`` over ``sites`` (none: the machine's clean Python), made anew."""
    if root.exists() or root.is_symlink():
        shutil.rmtree(root)
    lib = root / "lib" / VERSION
    (root / "bin").mkdir(parents=True)
    os.symlink(interpreter(), root / "bin" / VERSION)
    for name in PYTHON_NAMES[:2]:
        os.symlink(VERSION, root / "bin" / name)
    lib.mkdir(parents=True)
    with os.scandir(stdlib()) as entries:
        for entry in entries:
            if entry.name not in ("site-packages", "dist-packages"):
                os.symlink(entry.path, lib / entry.name)
    own = lib / "site-packages"
    own.mkdir()
    added = [str(site) for site in sites] or [str(wheel) for wheel in bundled_wheels()]
    lines = "".join(f"import site; site.addsitedir({path!r})\n" for path in added)
    (own / BASE_PTH).write_text(lines)
    return Base(root, tuple(sites))


READY = "base.json"


def shared_base(folder: Path, sites: Sequence[Path]) -> Base:
    """The base over ``sites`` kept in ``folder`` for every job that has the same ones (made
    once, whole or not at all: built aside, then renamed into place)."""
    key = "\n".join([str(interpreter()), str(stdlib()), *map(str, sites)])
    root = folder / hashlib.sha256(key.encode()).hexdigest()[:20]
    if (root / READY).is_file():
        return Base(root, tuple(sites))
    folder.mkdir(parents=True, exist_ok=True)
    aside = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=folder))
    try:
        make_base(aside, sites)
        (aside / READY).write_text(key + "\n")
        try:
            os.rename(aside, root)
        except OSError:  # another job made it meanwhile
            if not (root / READY).is_file():
                raise
    finally:
        if aside.exists():
            shutil.rmtree(aside, ignore_errors=True)
    return Base(root, tuple(sites))


@dataclass(frozen=True)
class Layer:
    """One replica's own virtual environment at ``root`` over ``base``, made fresh by
    :meth:`fresh` before every start."""

    root: Path
    base: Base

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def fresh(self) -> None:
        """Made anew with as few system calls as it takes (each gives up the GIL, and a
        replica's start makes this on the job engine's thread): each folder made once, top
        down, and each file written whole at its mode, never through a text file object."""
        remove(self.root)
        self.root.mkdir(parents=True)
        for folder in ("lib", f"lib/{VERSION}", f"lib/{VERSION}/site-packages", "bin"):
            (self.root / folder).mkdir()
        base_bin = self.base.root / "bin"
        write_new(
            self.root / "pyvenv.cfg",
            f"home = {base_bin}\ninclude-system-site-packages = true\n"
            f"version = {sys.version_info.major}.{sys.version_info.minor}."
            f"{sys.version_info.micro}\n",
            0o666,
        )
        os.symlink(base_bin / VERSION, self.python)
        for name in PYTHON_NAMES[1:]:
            os.symlink("python", self.bin / name)
        script = PIP_SCRIPT.format(python=self.python)
        for name in PIP_NAMES:
            write_new(self.bin / name, script, 0o700)  # the owner's, as all the emulator writes


def remove(path: Path) -> None:
    """``path``'s tree removed, when there is one (a symbolic link there is refused, as
    ``shutil.rmtree`` refuses it)."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
