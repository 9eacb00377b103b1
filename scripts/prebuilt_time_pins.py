"""The versions of a prebuilt image's time, for the packages the catalog has no version of.

The catalog holds the whole PyPI list Google's page of prebuilt training containers gives
for some images (scikit-learn 0.23/1.0, XGBoost 1.1/1.6: 33 packages each) and only the
framework's five for the newer ones (scikit-learn 1.6, XGBoost 2.1: numpy, pandas, scipy,
scikit-learn, xgboost: the rest of the page's list for them, google-cloud-datastore 1.15.5
beside google-cloud-bigquery 3.29.0 among it, sent pip's resolver back through google-api-core's
releases for minutes, and was left out). Their stand-ins took everything else at its newest
(protobuf 7.x), where the image holds what was current when it was built (issue 44, item 8).

The image can be no older than the newest release the page lists for it (scipy 1.15.2,
published 2025-02-17, for both), so that day is its time: this script resolves the
image's packages as its stand-in installs them (the page's pins, ``cloudml-hypertune``,
``google-cloud-storage``), then holds every other distribution pip chose at its newest
release published before that day, and resolves again until nothing pip chooses is newer.
A distribution with no release since that day (cloudml-hypertune: 0.1.0.dev6, 2019) is left
unpinned: its newest is the image's.
It prints the rows for ``trainpool/catalog/included/data/prebuilt_packages.csv`` (``verified``
false: the day is inferred, not read from Google).

    python scripts/prebuilt_time_pins.py scikit-learn 1.6

It asks the package index (PyPI's JSON simple API, PEP 691/700, for upload times) and
runs ``pip install --dry-run --report``; it needs the network.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import tempfile
import urllib.request
from datetime import datetime
from functools import cache
from pathlib import Path

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from trainpool.catalog.included import included_packages
from trainpool.emulator.stand_ins.virtualenvs import ALWAYS

SIMPLE = "https://pypi.org/simple/{}/"
ROUNDS = 10


@cache
def _releases(name: str) -> dict[Version, datetime]:
    """Each release of ``name`` with the time its first file was published."""
    request = urllib.request.Request(
        SIMPLE.format(canonicalize_name(name)),
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        files = json.load(answer)["files"]
    out: dict[Version, datetime] = {}
    for entry in files:
        version = _version_of(entry["filename"])
        if version is None or not entry.get("upload-time") or entry.get("yanked"):
            continue
        when = datetime.fromisoformat(entry["upload-time"].replace("Z", "+00:00"))
        out[version] = min(when, out.get(version, when))
    return out


def _version_of(filename: str) -> Version | None:
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        if filename.endswith((".tar.gz", ".zip")):
            return parse_sdist_filename(filename)[1]
    except (InvalidVersion, ValueError):
        return None
    return None


def published(name: str, version: str) -> datetime:
    return _releases(name)[Version(version)]


def newest_before(name: str, day: datetime) -> Version | None:
    """The newest final release of ``name`` published before ``day``."""
    earlier = [v for v, when in _releases(name).items() if when < day and not v.is_prerelease]
    return max(earlier, default=None)


def resolve(requirements: list[str]) -> dict[str, str]:
    """What pip installs for ``requirements`` on this Python: name -> version."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder, "report.json")
        pip = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
             "--quiet", "--report", str(report), *requirements],
            capture_output=True, text=True,
        )  # fmt: skip
        if pip.returncode:
            raise SystemExit(f"pip could not resolve {requirements}:\n{pip.stderr}")
        installed = json.loads(report.read_text())["install"]
    return {canonicalize_name(d["metadata"]["name"]): d["metadata"]["version"] for d in installed}


def time_pins(framework: str, version: str) -> tuple[datetime, str, dict[str, str]]:
    """The image's day, the listed release that sets it (``scipy 1.15.2``), and the versions
    of its time of every distribution its stand-in holds that the page does not list."""
    rows = included_packages(framework, version)
    listed = {canonicalize_name(p.package): p.version for p in rows if p.verified}
    if not listed:
        raise SystemExit(f"the catalog lists no packages for {framework} {version}")
    setter = max(listed, key=lambda name: published(name, listed[name]))
    day = published(setter, listed[setter])
    held: dict[str, str] = {}
    for _ in range(ROUNDS):
        pinned = listed | held
        asked = [f"{n}=={v}" for n, v in pinned.items()]
        asked += [name for name in ALWAYS if canonicalize_name(name) not in pinned]
        chosen = resolve(asked)
        newer: dict[str, str] = {}
        for name, got in chosen.items():
            if name in listed or all(when < day for when in _releases(name).values()):
                continue  # the page's, or nothing published since the image's day
            then = newest_before(name, day)
            if then is not None and Version(got) > then:
                newer[name] = str(then)
            elif name not in held:
                held[name] = got
        if not newer:
            return day, f"{setter} {listed[setter]}", dict(sorted(held.items()))
        held.update(newer)
    raise SystemExit(f"no resolution of {framework} {version}'s time in {ROUNDS} rounds")


def main(argv: list[str]) -> int:
    framework, version = argv
    day, setter, held = time_pins(framework, version)
    page = ", ".join(p.package for p in included_packages(framework, version) if p.verified)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    source = (
        f"not among the page's versions the catalog holds for this image ({page}): the newest "
        f"release published before {day:%Y-%m-%d}, the day the newest version the page lists "
        f"({setter}) was published, so the image is no older; as pip resolves the image's pins "
        f"on Python {python} with every other distribution held to that day "
        f"(scripts/prebuilt_time_pins.py, {datetime.now():%Y-%m-%d})"
    )
    writer = csv.writer(sys.stdout, lineterminator="\n")
    for name, got in held.items():
        writer.writerow([framework, version, name, got, source, "false"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
