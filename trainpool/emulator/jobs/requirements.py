"""A trainer package's requirements, resolved as its image's framework is when they cannot install.

Trainer packages pin what their image has: Google's distributed-training notebook
(GoogleCloudPlatform/vertex-ai-samples,
``notebooks/official/training/get_started_with_vertex_distributed_training.ipynb``) packages
a trainer whose ``setup.py`` says ``install_requires=['tensorflow==2.8.0',
'tensorflow_datasets==1.3.0']`` for ``tf-cpu.2-8``. On Vertex the first is already there;
here the image's stand-in
(:mod:`trainpool.emulator.stand_ins.virtualenvs`) holds the nearest TensorFlow that installs
on this machine's Python, and 2.8.0 has no build for it. When pip cannot install a
package with its requirements as they are (:mod:`.packages` tries that first), they are
resolved here, each written in the job log with what was installed instead:

- a requirement on the framework the environment stands in for (``tensorflow`` on a
  TensorFlow image, whose stand-in has ``tensorflow-cpu``; ``torch`` on a PyTorch image) is
  met by the stand-in's, whatever version it asks: the image itself is stood in for so;
- ``torch`` elsewhere is this machine's CPU build, ``torch==2.13.0`` (any other version
  pulls the CUDA libraries, gigabytes): :data:`trainpool.emulator.stand_ins.virtualenvs.TORCH`;
- a requirement pinned to versions none of which has a build for this Python gets the
  nearest version that has one (:func:`.pip_versions.nearest`: the first newer release
  series, its newest patch);
- a requirement with no installable version at all fails the job, naming it (pip's words).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from trainpool.emulator.stand_ins import pip_versions
from trainpool.emulator.stand_ins.virtualenvs import TORCH

CHECKS_AT_ONCE = 4
_VERSION = re.compile(r"\d+(?:\.\d+)*")

Pip = Callable[..., subprocess.CompletedProcess[str]]
"""Runs the pool's pip with these arguments (:func:`.packages.pip_runner`)."""


class NoVersion(Exception):
    """pip could not read a package's requirements; the message says why."""


@dataclass
class Resolution:
    """What to install (``install``) and the job log's lines on what was changed."""

    install: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    changed: set[str] = field(default_factory=set)
    """The requirements of ``install`` that replace what was asked."""


def of_archives(pip: Pip, archives: Sequence[str], isolation: Sequence[str]) -> list[Requirement]:
    """The requirements (``Requires-Dist``) of ``archives`` that apply here (markers
    evaluated, extras left out), read by pip without installing anything."""
    done = pip(
        "install", "--dry-run", "--no-deps", "--ignore-installed", "--quiet",
        "--report", "-", *isolation, *archives,
    )  # fmt: skip
    if done.returncode != 0:
        raise NoVersion(f"pip could not read the requirements of {list(archives)}: "
                        f"{done.stderr.strip()[-2000:]}")  # fmt: skip
    found = []
    for item in json.loads(done.stdout).get("install", []):
        for text in item.get("metadata", {}).get("requires_dist") or []:
            try:
                requirement = Requirement(text)
            except InvalidRequirement:
                continue
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                found.append(requirement)
    return found


def stand_ins(
    requirements: Sequence[Requirement], provides: Mapping[str, str], framework: str
) -> Resolution:
    """The requirements with those on the environment's framework (``provides``: name ->
    the stand-in's version; ``framework``: what stands in, e.g. ``tensorflow-cpu 2.12.1``)
    and on torch replaced."""
    resolution = Resolution()
    given = {canonicalize_name(name): version for name, version in provides.items()}
    for requirement in requirements:
        name = canonicalize_name(requirement.name)
        if name in given:
            resolution.notes.append(
                f"  {requirement} (asked): {framework} of the image's stand-in stands in for it, "
                "as for the image's own framework"
            )
        elif name == "torch":
            resolution.install.append(f"torch=={TORCH}")
            resolution.changed.add(f"torch=={TORCH}")
            resolution.notes.append(
                f"  {requirement} (asked): torch {TORCH}, the CPU build this machine has (every "
                "other version pulls the CUDA libraries)"
            )
        else:
            resolution.install.append(str(requirement))
    return resolution


def _wanted(requirement: Requirement) -> str | None:
    """The version a requirement aims at: its highest mentioned version (``==1.3.0``,
    ``<2.0``, ``~=1.4``), None when it names none."""
    versions = [found for spec in requirement.specifier for found in _VERSION.findall(spec.version)]
    if not versions:
        return None
    return max(versions, key=lambda v: tuple(int(p) for p in v.split(".")))


def _check(python: Path, text: str) -> str | None:
    """The replacement of requirement ``text`` when no version it allows has a build for
    this Python (wheels) but another version does: the nearest; None otherwise (it
    installs as asked, or pip may still build it from its source)."""
    requirement = Requirement(text)
    done = pip_versions.dry_run(python, text)
    if done.returncode == 0:
        return None
    wanted = _wanted(requirement)
    if wanted is None:
        return None
    chosen = pip_versions.nearest(wanted, pip_versions.listed_versions(done.stderr))
    return None if chosen is None else f"{requirement.name}=={chosen}"


def nearest_builds(python: Path, wanted: Sequence[str]) -> Resolution:
    """``wanted`` with each versioned requirement that has no build for this Python replaced
    by the nearest version that has one (the first newer release series, its newest patch:
    :func:`.pip_versions.nearest`); the others as they are, for pip to find or refuse."""
    versioned = [text for text in wanted if _wanted(Requirement(text))]
    with ThreadPoolExecutor(max_workers=CHECKS_AT_ONCE) as pool:
        found = list(pool.map(lambda t: _check(python, t), versioned))
    checked = dict(zip(versioned, found, strict=True))
    resolution = Resolution()
    for text in wanted:
        replacement = checked.get(text)
        if replacement is None:
            resolution.install.append(text)
            continue
        resolution.install.append(replacement)
        resolution.changed.add(replacement)
        resolution.notes.append(
            f"  {text} (asked): {replacement.split('==', 1)[1]} installed, the nearest version "
            "with a build for this machine's Python"
        )
    return resolution


def as_asked(python: Path, resolution: Resolution) -> list[str]:
    """The job log's lines for the requirements installed as asked: what pip installed."""
    kept = [Requirement(text) for text in resolution.install if text not in resolution.changed]
    versions = pip_versions.installed(python, [r.name for r in kept])
    return [f"  {r} (asked): {versions.get(r.name) or '?'} installed" for r in kept]
