"""Which version of a package installs here: the one asked for, else the nearest one that does.

A prebuilt image's packages were built for its Python (3.7 or 3.10 mostly); this machine's
Python may have no build of that exact version (numpy 1.18.5 has no wheel for Python
3.11). pip is asked, as it would install it (``--dry-run --only-binary=:all:`` against the
configured package index), and when the exact version has no build it lists the versions
that have one; the nearest is chosen by :func:`nearest`. A package published only as
source (``webapp2 3.0.0b1``, ``crcmod 1.7``: no version has a wheel) is asked again as pip
would build it from its sdist, at the exact version.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

_FROM_VERSIONS = re.compile(r"\(from versions: ([^)]*)\)")
_DEPENDS = re.compile(r"^\s*\S+ \S+ depends on (.+?)\s*$", re.MULTILINE)


class NoBuild(Exception):
    """pip found no build of the package for this Python, or could not be asked."""


@dataclass(frozen=True)
class Choice:
    """The version to install of ``package``: ``installed``, asked as ``requested``."""

    package: str
    requested: str
    installed: str
    reason: str = ""
    """Why ``installed`` is not the nearest build to ``requested`` (what another pin's
    package depends on; a pre-release's release); empty when nothing."""

    @property
    def exact(self) -> bool:
        return _matches(self.installed, self.requested)


def _matches(version: str, requested: str) -> bool:
    if requested.endswith(".*"):
        return version == requested[:-2] or version.startswith(requested[:-1])
    try:
        return Version(version) == Version(requested)
    except InvalidVersion:
        return version == requested


def dry_run(
    python: Path, requirement: str, *, binary: bool = True
) -> subprocess.CompletedProcess[str]:
    """What pip would install for ``requirement`` alone, from builds (wheels) only unless
    ``binary`` is False (then an sdist counts: pip reads its metadata by building it)."""
    only = ["--only-binary=:all:"] if binary else []
    return subprocess.run(
        [str(python), "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps"]
        + [*only, "--quiet", "--report", "-", "--disable-pip-version-check"]
        + ["--no-input", requirement],
        capture_output=True,
        text=True,
    )


def nearest(requested: str, versions: list[str]) -> str | None:
    """The version of ``versions`` nearest ``requested`` (``1.18.5`` or a series ``2.8.*``):
    the first release series above it, newest patch of that series; when there is none
    above, the newest below. Pre-releases are never chosen."""
    releases = []
    for text in versions:
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not version.is_prerelease and not version.is_devrelease:
            releases.append(version)
    if not releases:
        return None
    wanted = Version(requested.removesuffix(".*"))
    above = sorted(v for v in releases if v > wanted)
    if not above:
        return str(max(releases))
    series = above[0].release[:2]
    return str(max(v for v in above if v.release[:2] == series))


def listed_versions(stderr: str) -> list[str]:
    """The versions pip lists in "(from versions: ...)" when none matches ([] for none)."""
    listed = _FROM_VERSIONS.search(stderr)
    versions = [] if listed is None else [v.strip() for v in listed.group(1).split(",")]
    return [v for v in versions if v and v != "none"]


def choose(python: Path, package: str, requested: str) -> Choice:
    """The version of ``package`` to install with ``python``'s pip: ``requested`` (a version,
    or a series ``2.8.*``) when a build of it installs here, else the nearest that does.
    Raises :class:`NoBuild` (pip's words) when none does."""
    done = dry_run(python, f"{package}=={requested}")
    if done.returncode == 0:
        report = json.loads(done.stdout)
        return Choice(package, requested, report["install"][0]["metadata"]["version"])
    listed = listed_versions(done.stderr)
    if not listed and not requested.endswith(".*"):
        # no version has a wheel for this Python (or none at all): the exact one from source
        source = dry_run(python, f"{package}=={requested}", binary=False)
        if source.returncode == 0:
            report = json.loads(source.stdout)
            return Choice(package, requested, report["install"][0]["metadata"]["version"])
    chosen = nearest(requested, listed)
    if chosen is None:
        raise NoBuild(f"pip finds no build of {package} for this Python: {done.stderr.strip()}")
    return Choice(package, requested, chosen)


def conflicts(stderr: str, pinned: Collection[str]) -> dict[str, SpecifierSet]:
    """What pip's "The conflict is caused by" lines ask of the ``pinned`` packages (names as
    :func:`packaging.utils.canonicalize_name` gives them) that other packages depend on:
    ``scikit-learn 1.1.3 depends on joblib>=1.0.0`` is ``{"joblib": SpecifierSet(">=1.0.0")}``
    when joblib is pinned; the specifiers of one package are joined."""
    asked: dict[str, SpecifierSet] = {}
    for line in _DEPENDS.findall(stderr):
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        name = canonicalize_name(requirement.name)
        if name in pinned and requirement.specifier:
            asked[name] = asked.get(name, SpecifierSet()) & requirement.specifier
        # (a pin conflicting with an unpinned package: pip chose among that one's versions)
    return asked


def within(python: Path, package: str, requested: str, allowed: SpecifierSet) -> Choice | None:
    """The version of ``package`` nearest ``requested`` (as :func:`nearest` reads nearest)
    that has a build here and that ``allowed`` admits; None when none does."""
    done = dry_run(python, f"{package}==0+none")
    versions = [v for v in listed_versions(done.stderr) if allowed.contains(v, prereleases=False)]
    chosen = nearest(requested, versions)
    if chosen is None:
        return None
    why = f"the other packages as they install here need {package}{allowed}"
    return Choice(package, requested, chosen, f"{why}: the nearest that installs with them")


def installed(python: Path, names: list[str]) -> dict[str, str]:
    """The installed version of each of ``names`` that ``python`` finds ("" for none)."""
    code = (
        "import importlib.metadata as m, json, sys\n"
        "def version(name):\n"
        "    try:\n"
        "        return m.version(name)\n"
        "    except m.PackageNotFoundError:\n"
        "        return ''\n"
        "print(json.dumps({n: version(n) for n in sys.argv[1:]}))"
    )
    done = subprocess.run(
        [str(python), "-c", code, *names], capture_output=True, text=True, check=True
    )
    found: dict[str, str] = json.loads(done.stdout)
    return found


def held(python: Path) -> dict[str, str]:
    """Every distribution ``python`` finds, by its name as pip compares them (PEP 503), with
    its version: what an environment holds, the dependencies pip chose included."""
    code = (
        "import importlib.metadata as m, json, re\n"
        "print(json.dumps({re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(): d.version\n"
        "                  for d in m.distributions()}, sort_keys=True))"
    )
    done = subprocess.run(
        [str(python), "-I", "-c", code], capture_output=True, text=True, check=True
    )
    found: dict[str, str] = json.loads(done.stdout)
    return found
