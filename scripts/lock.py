"""Print the installed versions of trainpool[cli,emulator]'s whole dependency closure.

Run in an environment where ``pip install -e '.[dev]'`` resolved the versions to pin;
its output is ``constraints.txt``.
"""

from __future__ import annotations

import importlib.metadata as metadata
import re

from packaging.markers import default_environment
from packaging.requirements import Requirement

HEADER = """\
# Exact versions trainpool is compiled, tested and shipped with (the components image
# and CI install with -c constraints.txt; pyproject.toml keeps ranges for users).
# The closure of trainpool[cli,emulator] on Python 3.11, regenerated with:
#   python3 scripts/lock.py > constraints.txt"""


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(name: str, extras: tuple[str, ...], seen: dict[str, str]) -> None:
    """Add ``name`` and everything it requires (with ``extras``) to ``seen``."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return
    if _key(name) in seen and not extras:
        return
    seen[_key(name)] = dist.version
    for line in dist.requires or []:
        req = Requirement(line)
        wanted = req.marker is None or any(
            req.marker.evaluate({**default_environment(), "extra": extra})
            for extra in ("", *extras)
        )
        if wanted and _key(req.name) != "trainpool":
            closure(req.name, tuple(req.extras), seen)


def main() -> None:
    seen: dict[str, str] = {}
    closure("trainpool", ("cli", "emulator"), seen)
    seen.pop("trainpool")
    print(HEADER)
    for key in sorted(seen):
        print(f"{key}=={seen[key]}")


if __name__ == "__main__":
    main()
