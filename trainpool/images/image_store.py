"""The local image store: images without a Docker engine, run by the emulator.

An image is a content-addressed snapshot of its build context plus the
Dockerfile's ENTRYPOINT, CMD, WORKDIR and ENV, and a Python environment made
for it: a virtualenv over the packages of the environment trainpool runs in (a
virtualenv, a conda env or the system: its site-packages are added by a ``.pth``
file, since ``--system-site-packages`` alone reaches only the *base*
interpreter's), so torch and the rest are reused, into which the image's
requirements files are ``pip install``-ed (a no-op for what is there already). **No other RUN step
is executed** (apt, curl, ...): :func:`add` returns them so callers say so.

Layout under ``<root>/images/``::

    <digest>/context/     the build context as Docker would see it
    <digest>/venv/        the image's Python environment
    <digest>/image.json   the image settings; written last, so its presence means "built"
    refs/<quoted name>    "repository:tag" -> digest
    locks/<digest>        held while that image is built (builds of one context wait)
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from trainpool.home import Home, locked
from trainpool.images import image_config, image_ref, store_check
from trainpool.images.context import BuildContext

_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)?)?$")
_REQUIREMENTS_FLAG = re.compile(r"(?:^|\s)(?:-r|--requirement)(?:\s+|=)(\S+)")


@dataclass(frozen=True)
class LocalImage:
    """A stored image, ready to run as a local process.

    ``workdir`` and the paths in ``env`` are host paths: image paths that the
    Dockerfile COPYs from the context are mapped into ``context_dir``.
    ``entrypoint`` and ``cmd`` are as the Dockerfile says; :meth:`argv` applies a
    job's command/args the way a container runtime does.
    """

    context_dir: Path
    entrypoint: list[str]
    cmd: list[str]
    workdir: Path
    env: dict[str, str]
    python: Path
    digest: str = ""
    not_executed: list[str] = field(default_factory=list)

    def argv(self, command: list[str] | None = None, args: list[str] | None = None) -> list[str]:
        """The process to start: ``command`` replaces ENTRYPOINT (and CMD), ``args`` replace CMD.

        A leading ``python``/``python3``/``python3.X`` becomes this image's :attr:`python`.
        """
        if command:
            argv = [*command, *(args or [])]
        else:
            argv = [*self.entrypoint, *(args if args else self.cmd)]
        if argv and _PYTHON.match(posixpath.basename(argv[0])):
            argv[0] = str(self.python)
        return argv


def images_dir(root: Path) -> Path:
    return Home(Path(root)).images


def _ref_file(root: Path, name: str) -> Path:
    return images_dir(root) / "refs" / quote(name, safe="")


def _map_path(value: str, copies: list[tuple[str, str]], context_dir: Path) -> str:
    for rel, image_path in sorted(copies, key=lambda c: -len(c[1])):
        if value == image_path or value.startswith(image_path.rstrip("/") + "/"):
            tail = value[len(image_path) :].lstrip("/")
            return str((context_dir / rel / tail) if tail else (context_dir / rel)).rstrip("/")
    return value


def _map_env(value: str, copies: list[tuple[str, str]], context_dir: Path) -> str:
    if not value.startswith("/"):
        return value
    return ":".join(_map_path(part, copies, context_dir) for part in value.split(":"))


def _load(image_dir: Path) -> LocalImage | None:
    meta_file = image_dir / "image.json"
    if not meta_file.is_file():
        return None
    meta = json.loads(meta_file.read_text())
    context_dir = image_dir / "context"
    copies = [tuple(c) for c in meta["copies"]]
    env = {k: _map_env(v, copies, context_dir) for k, v in meta["env"].items()}
    venv_bin = image_dir / "venv" / "bin"
    env["PATH"] = os.pathsep.join([str(venv_bin), env.get("PATH", os.environ.get("PATH", ""))])
    workdir = Path(_map_path(meta["workdir"], copies, context_dir))
    return LocalImage(
        context_dir=context_dir,
        entrypoint=meta["entrypoint"],
        cmd=meta["cmd"],
        workdir=workdir if workdir.is_dir() else context_dir,
        env=env,
        python=venv_bin / "python",
        digest=meta["digest"],
        not_executed=meta["notExecuted"],
    )


def lookup(image_uri: str, root: Path | str) -> LocalImage | None:
    """The stored image that ``image_uri`` names, or None when the store has none.

    ``REPO:TAG`` goes through the tag; ``...@sha256:<digest>`` names the image directly.
    """
    root = Path(root).resolve()
    try:
        ref = image_ref.parse(image_uri)
    except ValueError:
        return None
    if ref.digest:
        return _load(images_dir(root) / ref.digest.removeprefix("sha256:"))
    ref_file = _ref_file(root, ref.named)
    if not ref_file.is_file():
        return None
    return _load(images_dir(root) / ref_file.read_text().strip())


def _requirements(config: image_config.ImageConfig, context_dir: Path) -> list[Path]:
    found = []
    for run in config.runs:
        if "pip" not in run:
            continue
        for name in _REQUIREMENTS_FLAG.findall(run):
            image_path = posixpath.join(config.workdir, name)
            host = Path(_map_path(image_path, config.copies, context_dir))
            if host.is_file() and host not in found:
                found.append(host)
    if not found and (context_dir / "requirements.txt").is_file():
        found.append(context_dir / "requirements.txt")
    return found


HOST_PTH = "_trainpool_host_env.pth"


def host_site_dirs() -> list[str]:
    """The site-packages of the environment this interpreter runs in (venv, conda or system)."""
    paths = sysconfig.get_paths()
    found = [paths["purelib"], paths["platlib"], *site.getsitepackages()]
    return [p for i, p in enumerate(found) if p not in found[:i] and os.path.isdir(p)]


_COMMENT = re.compile(r"(^|\s)#.*$")


def _installs_something(requirements: Path) -> bool:
    """Whether a requirements file has a line that is not blank or a comment (pip's rule:
    ``#`` at the start or after whitespace); one that has none installs nothing, so pip
    (two interpreter starts with ``--python``, ~2 s here) is not run for it."""
    try:
        lines = requirements.read_text(errors="replace").splitlines()
    except OSError:
        return True  # pip says what is wrong with it
    return any(_COMMENT.sub("", line).strip() not in ("", "\\") for line in lines)


def _make_venv(image_dir: Path, requirements: list[Path]) -> None:
    venv = image_dir / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
    )
    own = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(own, HOST_PTH).write_text("".join(f"{d}\n" for d in host_site_dirs()))
    for req in filter(_installs_something, requirements):
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install"]
            + ["--quiet", "--disable-pip-version-check", "--no-input", "-r", str(req)],
            check=True,
            cwd=req.parent,
        )


def tag(root: Path, name: str, digest: str) -> None:
    """Point ``repository:tag`` at a stored image."""
    ref_file = _ref_file(root, name)
    ref_file.parent.mkdir(parents=True, exist_ok=True)
    # One temporary name per process and thread: two builds may tag the same name at once.
    tmp = ref_file.with_name(f".{ref_file.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(digest + "\n")
    os.replace(tmp, ref_file)


def has(root: Path, digest: str) -> bool:
    return (images_dir(root) / digest / "image.json").is_file()


def check(root: Path, digest: str) -> str | None:
    """Why the stored image ``digest`` is no longer its context (:mod:`.store_check`), or
    None when it is (or when there is none)."""
    meta_file = images_dir(root) / digest / "image.json"
    try:
        meta = json.loads(meta_file.read_text())
    except FileNotFoundError:
        return None
    except ValueError:
        return "its image.json is not JSON"
    return store_check.problem(meta_file.parent, digest, meta)


@contextlib.contextmanager
def _building(root: Path, digest: str) -> Iterator[None]:
    """Hold the build lock of ``digest`` (across processes and threads)."""
    with locked(images_dir(root) / "locks" / digest):
        yield


def add(
    context: BuildContext, root: Path, names: list[str], dockerfile: str = "Dockerfile"
) -> list[str]:
    """Store ``context`` as an image (unless it is already there) and tag it with ``names``.

    Builds of one context are serialised by a lock file, so concurrent builds (two
    pipeline runs, two emulator builds) never remove each other's half-made image:
    the second waits and finds the first one's. A stored image whose files are no longer
    its context (:func:`check`) is rebuilt.
    Returns the Dockerfile RUN steps that were not executed.
    """
    root = Path(root).resolve()
    digest = context.digest
    image_dir = images_dir(root) / digest
    with _building(root, digest):
        if not has(root, digest) or check(root, digest) is not None:
            _build(context, root, image_dir, dockerfile)
    for name in names:
        tag(root, name, digest)
    return json.loads((image_dir / "image.json").read_text())["notExecuted"]


def _build(context: BuildContext, root: Path, image_dir: Path, dockerfile: str) -> None:
    entry = context.get(dockerfile)
    if entry is None:
        raise FileNotFoundError(f"dockerfile: {dockerfile!r} is not in the build context")
    with entry.open() as handle:
        # The base image's own variables are unknown here; the replicas run on this host,
        # so its PATH stands in for the base image's (``ENV PATH=/x:$PATH`` must keep it).
        inherited = {"PATH": os.environ.get("PATH", os.defpath)}
        config = image_config.parse(handle.read().decode(), context.build_args, inherited)
    images_dir(root).mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{context.digest[:12]}-", dir=images_dir(root)))
    try:
        context.stage(staging / "context")
    except BaseException:  # a full disk, say: no half-staged context is left behind
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if image_dir.exists():
        shutil.rmtree(image_dir)
    try:
        os.replace(staging, image_dir)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if has(root, context.digest):
            return
        raise
    try:
        _finish(config, context, image_dir)
    except BaseException:  # an image without its image.json is not one: none is left
        shutil.rmtree(image_dir, ignore_errors=True)
        raise


def _finish(config: image_config.ImageConfig, context: BuildContext, image_dir: Path) -> None:
    """Make a staged image whole: its virtualenv, then its ``image.json`` (written last: an
    image is in the store once that is there)."""
    requirements = _requirements(config, image_dir / "context")
    _make_venv(image_dir, requirements)
    pip_runs = [r for r in config.runs if "pip" in r and _REQUIREMENTS_FLAG.search(r)]
    meta = {
        "digest": context.digest,
        "base": config.base,
        "entrypoint": config.entrypoint,
        "cmd": config.cmd,
        "workdir": config.workdir,
        "env": config.env,
        "copies": [list(c) for c in config.copies],
        "requirements": [str(r.relative_to(image_dir / "context")) for r in requirements],
        "notExecuted": [r for r in config.runs if r not in pip_runs],
        **store_check.record(context.rows(), dict(context.build_args)),
    }
    tmp = image_dir / ".image.json"
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, image_dir / "image.json")
