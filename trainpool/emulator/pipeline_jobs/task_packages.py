"""A lightweight component's ``packages_to_install`` (and kfp), installed as its container
would install them, once per environment.

kfp compiles a lightweight component into ``sh -c SCRIPT`` whose script ends with
``PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip install --quiet --no-warn-script-location
[--index-url ...] 'PKG' ... && python3 -m pip install ... 'kfp==VERSION' '--no-deps' ... &&
"$0" "$@"`` (kfp ``dsl/component_factory.py``, ``_get_packages_to_install_command``): on
Vertex every start of the task's container runs those installs into the image's Python,
then the component. Locally the same installs are made once, by pip, into a site directory
of their own layered over the image's stand-in (:mod:`.task_python`), kept per image and
per pip command under ``<root>/stand-ins/task-packages/``; each task that asks for
exactly them runs over that site, read-only, and its script runs the component straight
away (the installs it asks for are there: pip would say "Requirement already satisfied").
A task's own later ``pip install`` still goes to its own Python (its layer), as in its
container. A script this module does not recognise runs as it is, pip included.

kfp's own bootstrap, ``kfp==VERSION --no-deps``, is the one install every default
lightweight component asks for: when this machine's Python has that very version, its files
are linked from there (the files pip would unpack from the same wheel), so a run needs no
package index for it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from trainpool.emulator.jobs import packages, replica_python
from trainpool.errors import InputError
from trainpool.home import locked

PREFIX = "PIP_DISABLE_PIP_VERSION_CHECK=1 "
PIP = ("python3", "-m", "pip", "install", "--quiet", "--no-warn-script-location")
RUN = '"$0" "$@"'
READY = "installed.json"


class InstallFailed(InputError):
    """pip could not install what a task asks for; the message has pip's words."""


def bootstrap(command: Sequence[str]) -> tuple[list[list[str]], list[str]] | None:
    """``(installs, command)``: the arguments of each ``pip install`` of kfp's bootstrap
    script, and the command without them; None when ``command`` is not that script or a
    part of it is not understood."""
    if len(command) < 3 or list(command[:2]) != ["sh", "-c"]:
        return None
    lines = command[2].split("\n")
    found = [i for i, line in enumerate(lines) if line.startswith(PREFIX)]
    if len(found) != 1:
        return None
    parts = [part.strip() for part in lines[found[0]][len(PREFIX) :].split("&&")]
    if parts[-1] != RUN:
        return None
    installs = []
    for part in parts[:-1]:
        try:
            words = shlex.split(part)
        except ValueError:
            return None
        if tuple(words[: len(PIP)]) != PIP or len(words) == len(PIP):
            return None
        installs.append(words[len(PIP) :])
    lines[found[0]] = RUN
    return installs, ["sh", "-c", "\n".join(lines), *command[3:]]


def _linkable(args: Sequence[str]) -> list[importlib.metadata.Distribution] | None:
    """The distributions of this machine's Python that ``--no-deps NAME==VERSION ...``
    asks for exactly (a requirement whose marker is false asks for nothing); None when
    ``args`` ask for anything else."""
    if "--no-deps" not in args or any(a.startswith("-") and a != "--no-deps" for a in args):
        return None
    found = []
    for text in args:
        if text == "--no-deps":
            continue
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            return None
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        pins = [s.version for s in requirement.specifier if s.operator == "=="]
        if len(pins) != 1 or len(requirement.specifier) != 1 or requirement.extras:
            return None
        try:
            dist = importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            return None
        if dist.version != pins[0]:
            return None
        found.append(dist)
    return found


def _link(dist: importlib.metadata.Distribution, site: Path) -> None:
    """Put ``dist``'s files (its RECORD) into ``site``: its modules as links to this
    machine's, its metadata as a copy."""
    for entry in dist.files or ():
        relative = Path(str(entry))
        if relative.is_absolute() or ".." in relative.parts:
            continue  # console scripts and data outside the site
        source = Path(str(dist.locate_file(entry)))
        target = site / relative
        if not source.is_file() or target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if relative.parts[0].endswith(".dist-info"):
            shutil.copyfile(source, target)
        else:
            target.symlink_to(source)


def site_of(folder: Path) -> Path:
    return folder / "lib" / replica_python.VERSION / "site-packages"


def provision(
    root: Path,
    installs: list[list[str]],
    sites: Sequence[Path],
    aliases: Mapping[str, str],
    note: Callable[[str], None],
) -> Path:
    """The site directory holding ``installs`` over an image whose Python has ``sites``
    (made once per root, image and installs; pip's output goes to ``note``). Raises
    :class:`InstallFailed` when pip fails, as the task's start would."""
    recipe = json.dumps(
        {"sites": [str(s) for s in sites], "installs": installs, "aliases": dict(aliases)},
        sort_keys=True,
    )
    name = hashlib.sha256(recipe.encode()).hexdigest()[:20]
    folder = root / "task-packages" / name
    with locked(root / "task-packages" / f".{name}.lock"):
        if (folder / READY).is_file():
            return site_of(folder)
        if folder.exists():
            shutil.rmtree(folder)
        python = packages.layer(replica_python.interpreter(), [str(s) for s in sites], folder)
        site = site_of(folder)
        packages.provide(site, aliases)
        env = {k: v for k, v in os.environ.items() if k not in packages.NOT_PASSED}
        for args in installs:
            linked = _linkable(args)
            if linked is not None:
                for dist in linked:
                    _link(dist, site)
                    name = f"{dist.metadata['Name']}=={dist.version}"
                    note(f"{name}: linked from this machine's Python")
                continue
            command = [str(python), "-m", "pip", "install", *PIP[4:], *args]
            command += ["--disable-pip-version-check", "--no-input"]
            note(f"pip install {shlex.join(args)} (once, into {folder})")
            done = subprocess.run(command, capture_output=True, text=True, env=env)
            for line in (done.stdout + done.stderr).splitlines():
                note(line)
            if done.returncode != 0:
                shutil.rmtree(folder, ignore_errors=True)
                raise InstallFailed.of(
                    "packages_to_install",
                    f"pip install {shlex.join(args)} failed (exit {done.returncode}): "
                    f"{done.stderr.strip()[-2000:]}",
                )
        (folder / READY).write_text(recipe)
    return site
