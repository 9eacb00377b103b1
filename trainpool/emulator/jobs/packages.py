"""``pythonPackageSpec.packageUris`` installed for one pool with their dependencies, as on Vertex.

Vertex's launcher in a prebuilt image copies each package and runs ``pip3 install --user
... --no-deps PKG`` then ``pip3 install --user PKG``, which installs the package's
``install_requires`` (the SDK's ``CustomTrainingJob(requirements=[...])`` become the
``install_requires`` of the package it builds: ``aiplatform.utils.source_utils``), as
the "Downloading the package" / "Running module" lines of a prebuilt-container job's log
(``gcloud ai custom-jobs stream-logs``) show.

A URI is a local path or ``gs://BUCKET/PATH`` (read from ``<root>/gcs/BUCKET/PATH``).
A directory goes on ``PYTHONPATH`` as it is. Wheels and sdists are installed with pip,
dependencies included, into a virtualenv of the pool's own (``JobFiles.package_env``)
layered over the pool's Python: its site directories are on the new one's path (a
``.pth`` file), so what the image already has is not installed again, and nothing is
written into the image. A package pip cannot install fails the job with pip's words.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from trainpool.cluster_env import gcs
from trainpool.errors import InputError

LAYER_PTH = "_trainpool_base_env.pth"


class PackageError(InputError):
    """A package URI that cannot be found or installed; the message names it."""


@dataclass(frozen=True)
class Installed:
    """How to run the pool's module: with ``python``, ``path`` on PYTHONPATH."""

    python: Path
    path: list[Path] = field(default_factory=list)


def local_path(uri: str, gcs_root: Path) -> Path:
    """Where ``uri`` lives on this machine (``gs://`` under ``gcs_root``, checked)."""
    if uri.startswith("gs://"):
        try:
            return Path(gcs.to_path(uri, gcs_root, "pythonPackageSpec.packageUris"))
        except gcs.GcsUriError as err:
            raise PackageError(str(err)) from err
    return Path(uri).expanduser().resolve()


def _site(python: Path) -> str:
    return subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def layer(python: Path, base_sites: list[str], target: Path) -> Path:
    """A virtualenv at ``target`` whose path also holds ``base_sites``; its python."""
    made = subprocess.run(
        [str(python), "-m", "venv", "--without-pip", str(target)], capture_output=True, text=True
    )
    if made.returncode != 0:
        raise PackageError(f"pythonPackageSpec: cannot make {target}: {made.stderr.strip()}")
    layered = target / "bin" / "python"
    Path(_site(layered), LAYER_PTH).write_text("".join(f"{d}\n" for d in base_sites))
    return layered


def install(
    uris: list[str], gcs_root: Path, target: Path, python: Path, base_sites: list[str]
) -> Installed:
    """Make every package in ``uris`` importable by the pool's ``python`` (whose packages
    live in ``base_sites``): archives with their dependencies into ``target``."""
    entries: list[Path] = []
    archives: list[str] = []
    for uri in uris:
        path = local_path(uri, gcs_root)
        if not path.exists():
            raise PackageError(
                f"pythonPackageSpec.packageUris: {uri!r} not found at {path}; accepted: a local "
                "path or gs://BUCKET/PATH present under the emulator's <root>/gcs/"
            )
        if path.is_dir():
            entries.append(path)
        else:
            archives.append(str(path))
    if not archives:
        return Installed(python, entries)
    layered = layer(python, base_sites, target)
    errors = ""
    # without build isolation first (setuptools is in every environment: no download);
    # then as Vertex's pip does it, isolated
    for isolation in (["--no-build-isolation"], []):
        done = subprocess.run(
            [str(layered), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
            + ["--no-input", *isolation, *archives],
            capture_output=True,
            text=True,
        )
        if done.returncode == 0:
            return Installed(layered, entries)
        errors = done.stderr.strip()
    raise PackageError(
        f"pythonPackageSpec.packageUris: pip could not install {archives} with their "
        f"dependencies: {errors[-3000:]}"
    )
