"""Local stand-ins for Vertex's prebuilt training containers: a virtualenv with the framework.

A replica that names a prebuilt training image (``pythonPackageSpec.executorImageUri`` or
``containerSpec.imageUri``; the list is ``trainpool.catalog.prebuilt``) runs in a
virtualenv with that image's framework, built once per (framework, version) from the
package index and kept in ``Home.stand_ins``:

- the framework at the image's version, and the packages the docs say the image ships
  at theirs (``data/prebuilt_packages.csv``), each the exact version where a build of it
  installs on this machine's Python, else the nearest one that does
  (:mod:`.pip_versions`);
- where Google's page lists no packages for the image's version, the packages of the
  nearest version of the same framework whose list it gives (:func:`borrowed`: PyTorch
  1.13 gets PyTorch 2.4's pandas and scikit-learn, so numpy and pandas, which every Vertex
  PyTorch image ships), at the versions pip installs with the framework (a list made for
  another version pins nothing here); Ray images get Ray Data (``ray[data]``: numpy,
  pandas, pyarrow), which Ray on Vertex AI's BigQuery integration runs on in the cluster
  (https://cloud.google.com/vertex-ai/docs/open-source/ray-on-vertex-ai/bigquery-integration);
- TensorFlow as ``tensorflow-cpu``; PyTorch always as ``torch==2.13.0``, the CPU build
  this machine's package configuration provides (any other torch version pulls the CUDA
  libraries, gigabytes);
- ``cloudml-hypertune`` and ``google-cloud-storage``, which every image lists (the page's
  "Included dependencies"), at the page's version where the catalog has one (the
  scikit-learn 0.23/1.0 and XGBoost 1.1/1.6 images, whose whole list the catalog holds:
  google-cloud-storage 1.29.0), else at their newest;
- what those packages depend on (google-api-core, google-auth, ...) as pip resolves it under
  the pins above, so at versions of the image's time where the pins bound them
  (google-cloud-bigquery 1.25.0 holds google-api-core below 2), and ``protobuf`` itself
  pinned where the catalog names a version (its row says where it comes from). Where the
  catalog holds only a few of the page's versions (scikit-learn 1.6, XGBoost 2.1: the
  framework's five; PyTorch 2.4: pandas and scikit-learn), it holds every other
  distribution at the newest version published before the image's day (the day of the
  newest release the page lists: scipy 1.15.2's, scikit-learn 1.6.1's; protobuf 5.29.3;
  ``scripts/prebuilt_time_pins.py``), and those are pinned too; the job log says which
  versions are the page's and which are inferred. Every distribution the environment
  holds is recorded with its version (``environment.json``, ``held``);
- nothing of the emulator's own packages (trainpool, kfp, ...): a container does not
  have them. The virtualenv's Python is this machine's, not the image's; the job log says
  which versions were asked and which installed.

Builds of one environment are serialised by a lock file (two jobs at once build once); a
failed build fails the job with pip's error and leaves nothing that counts as built
(``environment.json`` is written last).
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from trainpool.catalog import PrebuiltImage
from trainpool.catalog.included import documented_versions, included_packages
from trainpool.emulator.stand_ins import pip_versions
from trainpool.errors import InputError, Problem
from trainpool.home import Home, locked

FRAMEWORK_PACKAGES = {
    "tensorflow": "tensorflow-cpu",
    "pytorch": "torch",
    "xgboost": "xgboost",
    "scikit-learn": "scikit-learn",
    "ray": "ray",
}
TORCH = "2.13.0"
"""The one torch version installed: the CPU build on this machine (``/opt/wheels``)."""
ALWAYS = ("cloudml-hypertune", "google-cloud-storage")
RECIPE = 4
"""The version of what an environment holds; a built one of another version is built again
(2: the packages borrowed from the nearest documented version, Ray Data; 3: every package
the page lists for the image pinned, protobuf included, and every distribution recorded;
4: the scikit-learn 1.6, XGBoost 2.1 and PyTorch 2.4 images' other distributions at their
time's versions, not the newest)."""
EXTRAS = {"ray": "data"}
"""The framework's extras its images hold (see the module)."""
BUILD_TOOLS = ("wheel",)
"""So ``pip install`` of a trainer's sdist builds with the environment's setuptools,
without downloading a build environment each time (:mod:`.packages`)."""
BUILT = "environment.json"
RELAXATIONS = 8
"""How many times a build gives way to pip's conflicts between pins (the page's versions of
one image need not install together once some are replaced by the nearest that build here:
scikit-learn 1.1.3, standing in for 1.0, needs joblib>=1.0.0 where the page has 0.15.1)."""
DRY_RUNS_AT_ONCE = 4
"""How many packages' versions are asked of the index at once while an environment is built."""


class BuildFailed(InputError):
    """The environment of a prebuilt image could not be built; the message says what pip said."""


ALIASES = {"tensorflow": ("tensorflow", "tensorflow-gpu")}
"""The names a trainer's requirements give the framework by, where its stand-in's package
has another name (``tensorflow-cpu``): Vertex's TensorFlow images hold ``tensorflow``."""


@dataclass(frozen=True)
class Environment:
    """A built environment: its ``python``, its ``site`` directory, and the lines that say
    what it holds against what the image holds (``notes``); ``framework`` what stands in for
    the image's framework (``tensorflow-cpu 2.12.1``), ``aliases`` the other names a
    requirement may give it by, with its version (``{"tensorflow": "2.12.1"}``)."""

    python: Path
    site: Path
    notes: list[str]
    framework: str = ""
    aliases: dict[str, str] = field(default_factory=dict)


def key(image: PrebuiltImage) -> str:
    """The cache key: ``<framework>-<version>`` (``xgboost-1.1``)."""
    return f"{image.framework}-{image.version}"


def requested(image: PrebuiltImage) -> dict[str, str]:
    """Package -> version asked (``1.1.1``, or a series ``2.8.*``) for ``image``'s environment."""
    asked = {p.package: p.version for p in included_packages(image.framework, image.version)}
    package = FRAMEWORK_PACKAGES[image.framework]
    if package not in asked:
        asked[package] = f"{image.version}.*"
    if image.framework == "pytorch":
        asked["torch"] = TORCH
    return asked


def unpinned(image: PrebuiltImage, names: tuple[str, ...]) -> tuple[str, ...]:
    """Those of ``names`` that ``image``'s pins (:func:`requested`) do not name: installed at
    their newest."""
    pinned = {canonicalize_name(package) for package in requested(image)}
    return tuple(name for name in names if canonicalize_name(name) not in pinned)


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def borrowed(image: PrebuiltImage) -> tuple[str, tuple[str, ...]]:
    """Where Google's page lists no packages for ``image``'s version: the nearest version of
    its framework whose list it gives (nearer first, a newer one on a tie), and that list's
    packages not asked already; ``("", ())`` when there is nothing to borrow."""
    if included_packages(image.framework, image.version):
        return "", ()
    documented = {
        version for framework, version in documented_versions() if framework == image.framework
    }
    if not documented:
        return "", ()
    mine = _numbers(image.version)

    def distance(version: str) -> tuple[object, ...]:
        theirs = _numbers(version)
        width = max(len(mine), len(theirs))
        a, b = mine + (0,) * (width - len(mine)), theirs + (0,) * (width - len(theirs))
        return (tuple(abs(x - y) for x, y in zip(a, b, strict=True)), tuple(-n for n in b))

    nearest = min(documented, key=distance)
    asked = requested(image)
    names = tuple(
        p.package
        for p in included_packages(image.framework, nearest)
        if p.verified
        and p.package not in asked
        and p.package != FRAMEWORK_PACKAGES[image.framework]
    )
    return nearest, names


def ensure(
    home: Home, image: PrebuiltImage, note: Callable[[str], None], field: str = "imageUri"
) -> Environment:
    """The environment of ``image``, built first if there is none; its notes go to ``note``
    (what it holds: one note of several lines).
    :class:`BuildFailed` names ``field`` (where the job named the image) when it cannot be."""
    root = home.stand_ins.resolve()
    folder = root / key(image)
    with locked(root / f".{key(image)}.lock"):
        meta = _record(folder)
        moved = _moved_from(folder, meta)
        if moved:
            note(
                f"the stand-in of {image.framework} {image.version} was built in {moved} and "
                f"has moved to {folder}: a virtualenv holds its own paths, so it is built again"
            )
        if meta is None or moved or _recipe(meta) != RECIPE:
            note(f"building the environment of {image.framework} {image.version} in {folder}")
            try:
                _build(folder, image)
            except BuildFailed as err:
                raise BuildFailed([Problem(field, str(err))]) from err
            meta = json.loads((folder / BUILT).read_text())
    notes = [
        f"{image.uri} ({image.framework} {image.version}, Python {image.python or '?'} on "
        f"Vertex) runs in {folder} (Python {meta['python']}):",
        *meta["notes"],
    ]
    note("\n".join(notes))  # one note: a job log writes its lines at once
    package = FRAMEWORK_PACKAGES[image.framework]
    version = meta["installed"].get(package, "")
    aliases = {name: version for name in ALIASES.get(image.framework, ()) if version}
    return Environment(
        folder / "venv" / "bin" / "python",
        Path(meta["site"]),
        notes,
        f"{package} {version}".strip(),
        aliases,
    )


def _record(folder: Path) -> dict[str, Any] | None:
    """The record of the stand-in built in ``folder`` (None: none is built)."""
    try:
        meta = json.loads((folder / BUILT).read_text())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _moved_from(folder: Path, meta: dict[str, Any] | None) -> str:
    """Where the stand-in now in ``folder`` was built, by its record ``meta``, when elsewhere
    (its root moved with the project it sits in, ``./.trainpool``); "" when it was built
    here or is not built."""
    site = str((meta or {}).get("site") or "")
    if not site or Path(site).is_relative_to(folder / "venv"):
        return ""
    built, marker, _ = site.partition("/venv/")
    return built if marker else site


def _recipe(meta: dict[str, Any]) -> int | None:
    """The recipe of the environment whose record is ``meta``."""
    try:
        return int(meta.get("recipe", 1))
    except (TypeError, ValueError):
        return None


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "pip", *args, "--disable-pip-version-check", "--no-input"],
        capture_output=True,
        text=True,
    )


def _fail(image: PrebuiltImage, what: str, detail: str) -> BuildFailed:
    message = (
        f"{image.uri!r}: the local environment of {image.framework} {image.version} could "
        f"not be built: {what}: {detail.strip()[-3000:]}"
    )
    return BuildFailed([Problem("", message)])


def _build(folder: Path, image: PrebuiltImage) -> None:
    """Build the stand-in of ``image`` in ``folder`` (what was there removed first): a venv,
    the image's packages as pinned (pins given way when pip finds them in conflict), then
    its record."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    venv = folder / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
    if made.returncode != 0:
        raise _fail(image, "python -m venv failed", made.stderr)
    python = venv / "bin" / "python"

    def choose(asked: tuple[str, str]) -> pip_versions.Choice:
        package, version = asked
        if package == "torch":
            return pip_versions.Choice(package, version, version)
        try:
            return pip_versions.choose(python, package, version)
        except pip_versions.NoBuild as err:
            raise _fail(image, f"no version of {package} installs here", str(err)) from err

    # each choice asks the package index (a pip process, mostly waiting on it): all at once
    with ThreadPoolExecutor(max_workers=DRY_RUNS_AT_ONCE) as pool:
        choices = list(pool.map(choose, requested(image).items()))
    extra = EXTRAS.get(image.framework)
    nearest, names = borrowed(image)
    always = unpinned(image, ALWAYS)
    for _ in range(RELAXATIONS + 1):
        pins = _pins(image, choices, extra)
        # --no-compile: compiling every module of the framework (tensorflow: ~15 s of a ~50-s
        # build here) is left to the imports that need it, which cache their bytecode as usual
        # not --quiet: pip says which pins conflict ("The conflict is caused by") at info level
        done = _pip(
            python,
            "install",
            "--no-compile",
            *pins,
            *names,
            *always,
            *unpinned(image, BUILD_TOOLS),
        )
        if done.returncode == 0 or not _give_way(python, choices, done.stdout + done.stderr):
            break
    if done.returncode != 0:
        asked = " ".join([*pins, *names, *always])
        raise _fail(image, f"pip install {asked}", done.stderr)
    _write_built(folder, image, python, choices, extra, nearest, names)


def _write_built(
    folder: Path,
    image: PrebuiltImage,
    python: Path,
    choices: list[pip_versions.Choice],
    extra: str | None,
    nearest: str,
    names: tuple[str, ...],
) -> None:
    """Record the environment built in ``folder`` (its site directory, what was installed,
    held and borrowed, how it differs from ``image``) as its ``BUILT`` file, written whole
    or not at all."""
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    versions = pip_versions.installed(python, [*names, *_EXTRA_PACKAGES.get(extra or "", ())])
    meta = {
        "image": image.uri,
        "framework": image.framework,
        "version": image.version,
        "site": site,
        "python": platform.python_version(),
        "installed": {c.package: c.installed for c in choices},
        "held": pip_versions.held(python),
        "borrowed": {"from": nearest, "installed": {n: versions[n] for n in names}},
        "notes": describe(image, choices)
        + borrowed_notes(image, nearest, {n: versions[n] for n in names})
        + extra_notes(image, extra, versions),
        "recipe": RECIPE,
    }
    tmp = folder / f".{BUILT}"
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    tmp.replace(folder / BUILT)


def _pins(image: PrebuiltImage, choices: list[pip_versions.Choice], extra: str | None) -> list[str]:
    framework = FRAMEWORK_PACKAGES[image.framework]
    return [
        f"{c.package}[{extra}]=={c.installed}"
        if extra and c.package == framework
        else f"{c.package}=={c.installed}"
        for c in choices
    ]


def _give_way(python: Path, choices: list[pip_versions.Choice], stderr: str) -> bool:
    """Replace in ``choices`` each pin that pip says another pin's package cannot install
    with (its "The conflict is caused by" lines) by its nearest version that can; whether any
    was replaced (none: the conflict is not one between pins, and the build fails)."""
    pinned = {canonicalize_name(c.package) for c in choices if c.package != "torch"}
    asked = pip_versions.conflicts(stderr, pinned)
    replaced = False
    for i, choice in enumerate(choices):
        allowed = asked.get(canonicalize_name(choice.package))
        if allowed is None or allowed.contains(choice.installed, prereleases=True):
            continue
        found = pip_versions.within(python, choice.package, choice.requested, allowed)
        if found is not None and found.installed != choice.installed:
            choices[i] = found
            replaced = True
    return replaced


_EXTRA_PACKAGES = {"data": ("numpy", "pandas", "pyarrow")}
"""What an extra of :data:`EXTRAS` brings that the job log names."""


def borrowed_notes(image: PrebuiltImage, nearest: str, installed: dict[str, str]) -> list[str]:
    """The job log's lines on the packages taken from the nearest documented version."""
    if not installed:
        return []
    listed = {p.package: p.version for p in included_packages(image.framework, nearest)}
    return [
        f"  {name} {version} (Google's page lists no packages for {image.framework} "
        f"{image.version}; {image.framework} {nearest}'s, the nearest version it lists, has "
        f"{name} {listed[name]}: installed the version that installs with the rest)"
        for name, version in installed.items()
    ]


def extra_notes(image: PrebuiltImage, extra: str | None, versions: dict[str, str]) -> list[str]:
    """The job log's line on the framework's extra (:data:`EXTRAS`)."""
    if not extra:
        return []
    held = ", ".join(f"{n} {versions[n]}" for n in _EXTRA_PACKAGES[extra] if n in versions)
    return [
        f"  {FRAMEWORK_PACKAGES[image.framework]}[{extra}] ({held}): Ray on Vertex AI runs Ray "
        "Data in the cluster (its BigQuery integration)"
    ]


def describe(image: PrebuiltImage, choices: list[pip_versions.Choice]) -> list[str]:
    """The job log's lines: which versions the image has and which this environment has
    (``image``: the one it was built for; the lines hold for every image of its key)."""
    here = platform.python_version()
    inferred = {
        p.package for p in included_packages(image.framework, image.version) if not p.verified
    }
    lines = []
    for choice in choices:
        asked = choice.requested.removesuffix(".*")
        if choice.package == "torch":
            lines.append(
                f"  torch {choice.installed} (the image has PyTorch {image.version}; every "
                "PyTorch image runs with torch 2.13.0 here, the CPU build this machine has)"
            )
        elif choice.exact and choice.package in inferred:
            lines.append(
                f"  {choice.package} {choice.installed} (of the image's time: Google's page "
                "names no version; the catalog's row says how it was chosen)"
            )
        elif choice.exact:
            lines.append(f"  {choice.package} {choice.installed} (as on Vertex: {asked})")
        elif choice.reason:
            lines.append(
                f"  {choice.package} {choice.installed} (Vertex has {asked}; {choice.reason})"
            )
        else:
            lines.append(
                f"  {choice.package} {choice.installed} (Vertex has {asked}, which has no build "
                f"for Python {here} here; the nearest that installs)"
            )
    if image.accelerator != "cpu" and image.framework == "tensorflow":
        lines.append("  tensorflow-cpu stands in for the image's GPU build")
    always = unpinned(image, ALWAYS)
    if always:
        lines.append(
            f"  {', '.join(always)}: newest (every prebuilt image ships them; Google's page "
            "gives no version)"
        )
    return lines
