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
written into the image. Replicas see it read-only, under a Python of their own
(:mod:`.replica_python`). The environment's framework counts as installed under the names
a trainer asks for it by (a TensorFlow stand-in's ``tensorflow-cpu`` as ``tensorflow``: a
``tensorflow>=2.8`` requirement is met, as in the image). When pip cannot install a
package with its requirements as they are, they are resolved as the image's framework is
(:mod:`.requirements`: pins without a build here get the nearest version that has one),
the job log saying what was asked and what was installed; one that cannot be resolved
fails the job with pip's words, naming it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from trainpool.cluster_env import gcs
from trainpool.emulator.jobs import requirements
from trainpool.emulator.stand_ins.virtualenvs import TORCH
from trainpool.errors import InputError

LAYER_PTH = "_trainpool_base_env.pth"
CONSTRAINTS = "trainpool-constraints.txt"
_UNFOUND = re.compile(r"No matching distribution found for (\S+)")
NOT_PASSED = ("PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONNOUSERSITE", "VIRTUAL_ENV")
"""The emulator's settings that would change what pip sees as installed."""


class PackageError(InputError):
    """A package URI that cannot be found or installed; the message names it."""


@dataclass(frozen=True)
class Installed:
    """How to run the pool's module: with ``python``, ``path`` on PYTHONPATH."""

    python: Path
    path: list[Path] = field(default_factory=list)
    site: Path | None = None
    """The site directory the archives went to (None: nothing was installed)."""


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


def provide(site: Path, provides: Mapping[str, str]) -> None:
    """Mark each name of ``provides`` installed at its version in ``site`` (a distribution
    with metadata only), for pip: the framework of a stand-in under the names a
    trainer asks for it by."""
    for name, version in provides.items():
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            "Summary: stood in for by the environment's own build of the framework\n"
        )
        (info / "INSTALLER").write_text("trainpool\n")
        (info / "RECORD").write_text(f"{info.name}/METADATA,,\n{info.name}/INSTALLER,,\n")


def pip_runner(python: Path, target: Path, pins: Mapping[str, str]) -> requirements.Pip:
    """Runs ``python -m pip`` for the pool's packages, without the emulator's Python
    settings, with ``pins`` (name -> version) as constraints: this machine's torch
    (:data:`trainpool.emulator.stand_ins.virtualenvs.TORCH`) and the environment's framework."""
    constraints = target / CONSTRAINTS
    constraints.write_text("".join(f"{name}=={version}\n" for name, version in pins.items()))
    env = {k: v for k, v in os.environ.items() if k not in NOT_PASSED}

    def pip(*args: str) -> subprocess.CompletedProcess[str]:
        command = [str(python), "-m", "pip", *args, "--disable-pip-version-check", "--no-input"]
        if args and args[0] == "install":
            command += ["-c", str(constraints)]
        return subprocess.run(command, capture_output=True, text=True, env=env)

    return pip


def _install(pip: requirements.Pip, *args: str) -> tuple[bool, list[str], str]:
    """pip install ``args``: without build isolation first (setuptools is in every
    environment: no download), then as Vertex's pip does it, isolated. (done, the isolation
    that worked, pip's last words)."""
    errors = ""
    for isolation in (["--no-build-isolation"], []):
        done = pip("install", "--quiet", *isolation, *args)
        if done.returncode == 0:
            return True, isolation, ""
        errors = done.stderr.strip()
    return False, [], errors


def install(
    uris: list[str],
    gcs_root: Path,
    target: Path,
    python: Path,
    base_sites: list[str],
    note: Callable[[str], None] = lambda _: None,
    provides: Mapping[str, str] | None = None,
    framework: str = "",
) -> Installed:
    """Make every package in ``uris`` importable by the pool's ``python`` (whose packages
    live in ``base_sites``): archives with their dependencies into ``target``.
    ``provides``: the environment's framework under the names a requirement may use
    (name -> version), ``framework`` what it is (``tensorflow-cpu 2.12.1``)."""
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
    site = Path(_site(layered))
    provide(site, provides or {})
    pip = pip_runner(layered, target, {"torch": TORCH, **(provides or {})})
    done, _, errors = _install(pip, *archives)
    if not done:
        _resolve(pip, layered, archives, errors, note, provides or {}, framework)
    return Installed(layered, entries, site)


def _failed(archives: list[str], errors: str) -> PackageError:
    unfound = _UNFOUND.search(errors)
    named = f" ({unfound.group(1)} has no version that installs here)" if unfound else ""
    return PackageError(
        f"pythonPackageSpec.packageUris: pip could not install {archives} with their "
        f"dependencies{named}: {errors[-3000:]}"
    )


def _resolve(
    pip: requirements.Pip,
    python: Path,
    archives: list[str],
    errors: str,
    note: Callable[[str], None],
    provides: Mapping[str, str],
    framework: str,
) -> None:
    """Install ``archives`` (which pip could not install with their requirements as they
    are: ``errors``) and their requirements resolved by :mod:`.requirements`."""
    try:
        done, isolation, _ = _install(pip, "--no-deps", *archives)
        if not done:
            raise _failed(archives, errors)
        asked = requirements.of_archives(pip, archives, isolation)
        resolution = requirements.stand_ins(asked, provides, framework)
        if resolution.install:
            built = requirements.nearest_builds(python, resolution.install)
            done, _, later = _install(pip, *built.install)
            if not done:
                raise _failed(archives, later)
            built.changed |= resolution.changed
            resolution.notes += built.notes + requirements.as_asked(python, built)
    except requirements.NoVersion as err:
        raise PackageError(
            f"pythonPackageSpec.packageUris: pip could not install {archives} with their "
            f"dependencies: {err}"
        ) from err
    said = (errors.strip().splitlines() or [""])[-1][:300]
    note(
        f"the requirements of {[Path(a).name for a in archives]} do not all install here as "
        f"asked (pip: {said}); resolved as the image's framework is:"
    )
    for line in resolution.notes:
        note(line)
