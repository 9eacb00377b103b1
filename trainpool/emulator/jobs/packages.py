"""``pythonPackageSpec.packageUris`` made importable for one job.

A URI is a local path or ``gs://BUCKET/PATH`` (read from ``<root>/gcs/BUCKET/PATH``).
A directory goes on ``PYTHONPATH`` as it is; a wheel or sdist is installed with
pip into a per-job directory (without dependencies: they come from the host's
environment, which stands in for the executor image).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from trainpool.cluster_env import gcs
from trainpool.errors import InputError


class PackageError(InputError):
    """A package URI that cannot be found or installed; the message names it."""


def local_path(uri: str, gcs_root: Path) -> Path:
    """Where ``uri`` lives on this machine (``gs://`` under ``gcs_root``, checked)."""
    if uri.startswith("gs://"):
        try:
            return Path(gcs.to_path(uri, gcs_root, "pythonPackageSpec.packageUris"))
        except gcs.GcsUriError as err:
            raise PackageError(str(err)) from err
    return Path(uri).expanduser().resolve()


def install(uris: list[str], gcs_root: Path, target: Path) -> list[Path]:
    """The ``PYTHONPATH`` entries that make every package in ``uris`` importable."""
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
    if archives:
        result = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
            + ["--no-build-isolation", "--target", str(target), *archives],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise PackageError(
                f"pythonPackageSpec.packageUris: pip could not install {archives}: "
                f"{result.stderr.strip()[-2000:]}"
            )
        entries.append(target)
    return entries
