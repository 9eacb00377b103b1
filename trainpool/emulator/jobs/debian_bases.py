"""Stand-ins for the ``python:3.X-slim`` base images, made offline from Debian's packages.

A machine that cannot pull from Docker Hub (a sealed CI runner, a corporate network) can
still reach Debian's archive. ``mmdebstrap --variant=minbase`` makes a Debian root file
system from it, and ``docker import`` makes that an image (measured on these machines:
``reference/containers-here.md``). The image is laid out as the official ``python``
images are, so that Dockerfiles and commands written for them work: the interpreter is
``/usr/local/bin/python`` (and ``python3``, ``pip``, ``pip3``), first on ``PATH``, and
``pip install`` installs into ``/usr/local`` — a virtual environment there, since Debian
marks its own Python externally managed (PEP 668) and refuses ``pip install`` into it.
It holds Debian's ``ca-certificates`` too, so a build can trust a TLS-intercepting proxy
by adding the machine's CA bundle.

How it differs from the real image, which the job log and the image's labels say: the
Python is Debian's build of that suite's version (bookworm 3.11.2, not the newest 3.11),
and only the suite's ``minbase`` packages are there.

The stand-in is named :func:`stand_in_name` (``trainpool.local/stand-in/python:3.11-slim``),
never the public name, so it never shadows the real image on a machine that has it.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PREFIX = "trainpool.local/stand-in/"
LABEL = "org.trainpool.stand-in"
"""The label a stand-in carries: the public name it stands in for."""
DIFFERENCE_LABEL = "org.trainpool.stand-in.differs"


@dataclass(frozen=True)
class DebianBase:
    """A public base image and the Debian suite whose Python has its version."""

    suite: str
    python: str


BASES = {
    "python:3.9-slim": DebianBase("bullseye", "3.9"),
    "python:3.11-slim": DebianBase("bookworm", "3.11"),
    "python:3.13-slim": DebianBase("trixie", "3.13"),
}
"""What can be made here: Debian's bullseye has Python 3.9, bookworm 3.11, trixie 3.13."""


def stand_in_name(name: str) -> str:
    """The name the stand-in of public image ``name`` carries locally."""
    return PREFIX + name


def _require(name: str) -> DebianBase:
    if name not in BASES:
        raise ValueError(
            f"base image: {name!r} has no stand-in made from Debian's packages; accepted: "
            f"{', '.join(sorted(BASES))}"
        )
    return BASES[name]


def find(client: Any, name: str) -> Any | None:
    """The stand-in of ``name`` the engine has (a docker-py ``Image``), or None."""
    from docker import errors

    try:
        return client.images.get(stand_in_name(name))
    except errors.ImageNotFound:
        return None


def ensure(client: Any, name: str, mmdebstrap: str = "mmdebstrap") -> Any:
    """The stand-in of public image ``name`` in the engine of docker-py ``client``: the one it
    has, else one made now (about a minute and 250 MB; kept for every later use). Raises
    ``ValueError`` for a name with no stand-in and ``OSError`` when mmdebstrap is missing or
    fails (its output in the message)."""
    base = _require(name)
    found = find(client, name)
    if found is not None:
        return found
    program = shutil.which(mmdebstrap)
    if program is None:
        raise OSError(
            f"{mmdebstrap} is not installed: the stand-in of {name} is made with it from Debian's "
            "packages (apt-get install mmdebstrap)"
        )
    with tempfile.TemporaryDirectory(prefix="trainpool-base-") as tmp:
        rootfs = Path(tmp) / "rootfs.tar"
        made = subprocess.run(
            [
                program,
                "--variant=minbase",
                "--include=python3,python3-venv,ca-certificates",
                '--customize-hook=chroot "$1" python3 -m venv /usr/local',
                base.suite,
                str(rootfs),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if made.returncode != 0:
            raise OSError(
                f"mmdebstrap could not make Debian {base.suite} for the stand-in of {name} "
                f"(exit {made.returncode}):\n{made.stderr[-4000:]}"
            )
        differs = (
            f"Debian {base.suite}'s Python {base.python} in a virtual environment at /usr/local; "
            "minbase packages only"
        )
        repository, tag = stand_in_name(name).rsplit(":", 1)
        client.api.import_image_from_file(
            str(rootfs),
            repository=repository,
            tag=tag,
            changes=[
                "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
                "ENV LANG=C.UTF-8",
                f"ENV PYTHON_VERSION={base.python}",
                'CMD ["python3"]',
                f'LABEL {LABEL}="{name}"',
                f'LABEL {DIFFERENCE_LABEL}="{differs}"',
            ],
        )
    image = find(client, name)
    if image is None:
        raise OSError(f"the engine did not keep the stand-in of {name} it imported")
    return image
