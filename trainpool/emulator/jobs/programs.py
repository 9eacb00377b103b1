"""How one pool of a CustomJobSpec (REST JSON) runs: a :class:`Program`.

A pool runs, in this order of preference:
- ``containerSpec`` whose image the container engine has: containers of it
  (:mod:`.containers`), the real thing;
- ``pythonPackageSpec``: ``python -m MODULE ARGS``, its packages installed with their
  dependencies (:mod:`.packages`) over the executor image's environment: a prebuilt
  training image's local stand-in
  (:mod:`trainpool.emulator.stand_ins.virtualenvs`), else this machine's clean Python;
- ``containerSpec`` naming a prebuilt training image: its ``command`` and ``args`` in that
  image's environment (a leading ``python`` is the environment's);
- ``containerSpec`` whose image is in the local image store: ``LocalImage.argv`` (``command``
  replaces ENTRYPOINT, ``args`` replace CMD, as Docker does; a leading ``python`` is the
  image's interpreter), in a copy of the image's files and in its environment;
- where no container engine answers, ``containerSpec`` with a ``command`` only: that command
  on the host, in this machine's clean Python (never the emulator's), with a warning;
- otherwise the job cannot run, and fails at once: :class:`LaunchError` names the image and
  how to make it one the emulator has (``docker build -t IMAGE DIR``, ``gcloud builds
  submit --tag IMAGE DIR``, ``docker pull``/``docker load``; with no engine, ``trainpool
  build-image DIR --local``). Where an engine answers, an image that neither it, nor the
  local image store, nor Vertex's prebuilt catalog can give is never imitated by its command
  on the host: Vertex could not pull it either, and the command
  would run without the image's files and packages. Images are not pulled: a job never
  waits on a download the emulator cannot see the end of.

A leading Python of the command becomes :data:`REPLICA_PYTHON`, the replica's own Python,
which :mod:`.launches` puts in its place for each replica.
"""

from __future__ import annotations

import io
import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainpool.catalog import prebuilt_image
from trainpool.cluster_env.gcs import VERTEX_MOUNT
from trainpool.emulator.jobs import packages, replica_python
from trainpool.emulator.jobs.container_specs import EngineImage
from trainpool.emulator.jobs.containers import SWITCH_ENV
from trainpool.emulator.jobs.engine_images import (
    ImageUnavailable,
    StandInFailed,
    ensure_image,
    has_stand_in,
)
from trainpool.emulator.jobs.job_context import JobContext
from trainpool.emulator.stand_ins import virtualenvs
from trainpool.errors import InputError
from trainpool.images import image_store

PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)?)?$")
"""A command that names a Python interpreter (``python3``): the image's, found on its PATH,
which is the replica's own Python here; so is the emulator's own interpreter named by its
path (``sys.executable``), which no replica runs."""
REPLICA_PYTHON = "<the replica's python>"
"""In a :class:`Program`'s argv: the replica's own Python (:mod:`.replica_python`)."""


class LaunchError(InputError):
    """A pool cannot be started locally; the message says why and what to do."""


@dataclass(frozen=True)
class Program:
    """How one pool runs: ``image_env`` is the image's ENV, ``pool_env`` the pool's ``env``;
    ``context`` the stored build context each replica gets a copy of (None: an empty
    working directory), ``cwd`` the working directory inside it."""

    argv: list[str]
    image_env: dict[str, str]
    pool_env: dict[str, str]
    context: Path | None = None
    cwd: Path | None = None
    path: list[str] = field(default_factory=list)
    """Directories put on PATH after the replica's own Python (an environment's ``bin``)."""
    sites: list[Path] = field(default_factory=replica_python.bundled_wheels)
    """The site directories of the pool's Python (default: the machine's clean Python)."""
    read_only: list[Path] = field(default_factory=list)
    """The pool's own folders replicas must not change (its installed packages)."""
    python: str = ""
    """What the pool's Python is, for the job log."""
    container: PoolContainers | None = None
    """The image and overrides of a pool that runs as containers (then the rest is unused)."""


@dataclass(frozen=True)
class PoolContainers:
    """A pool as containers of ``image``: ``command`` replaces its ENTRYPOINT, ``args`` its CMD."""

    image: EngineImage
    command: list[str]
    args: list[str]


def _env_list(items: list[dict[str, Any]] | None) -> dict[str, str]:
    return {str(item["name"]): str(item.get("value", "")) for item in items or []}


def program_for(
    pool: int, pool_spec: dict[str, Any], ctx: JobContext, note: Callable[[str], None]
) -> Program:
    """The command, files, Python and extra environment of one pool, in the module's order of
    preference."""
    package = pool_spec.get("pythonPackageSpec")
    container = pool_spec.get("containerSpec") or {}
    image_uri = container.get("imageUri", "")
    command = list(container.get("command", []))
    args = list(container.get("args", []))
    env = _env_list(container.get("env"))
    engine_image = ctx.containers.image(image_uri) if ctx.containers and image_uri else None
    if package and ctx.containers is not None:
        packaged = _package_container(pool, package, ctx, note)
        if packaged is not None:
            return packaged
    elif engine_image is None and ctx.containers is not None and image_uri:
        if prebuilt_image(image_uri) is not None and not command:
            raise _no_command(pool, image_uri)
        if has_stand_in(image_uri):
            engine_image, _ = _engine_image(pool, image_uri, ctx, note)
    if engine_image is not None:
        return _container_program(image_uri, engine_image, command, args, env, ctx, note)
    if package:
        return _package_program(pool, package, ctx, note)
    return _image_program(pool, image_uri, command, args, env, ctx, note)


def _no_command(pool: int, image_uri: str) -> LaunchError:
    """A pool that names a prebuilt training image and no command to run in it."""
    return LaunchError(
        f"workerPoolSpecs[{pool}].containerSpec.command: empty with the prebuilt "
        f"training image {image_uri!r}; accepted: the command to run in it (or a "
        "pythonPackageSpec with it as executorImageUri)"
    )


def _image_program(
    pool: int,
    image_uri: str,
    command: list[str],
    args: list[str],
    env: dict[str, str],
    ctx: JobContext,
    note: Callable[[str], None],
) -> Program:
    """A ``containerSpec`` pool whose image the engine does not have (or with no engine): a
    prebuilt training image's stand-in, the local image store's image, the image pulled
    by the engine, else (no engine) its command on the host; LaunchError when none can."""
    prebuilt = prebuilt_image(image_uri) if image_uri else None
    if prebuilt is not None:
        if not command:
            raise _no_command(pool, image_uri)
        where = f"workerPoolSpecs[{pool}].containerSpec.imageUri"
        found = virtualenvs.ensure(ctx.home, prebuilt, note, where)
        return Program(
            _with_python(command + args),
            {},
            env,
            path=[str(found.python.parent)],
            sites=[found.site],
            python=f"the stand-in of {image_uri} ({found.python.parent.parent.parent})",
        )
    image = image_store.lookup(image_uri, ctx.home.root) if image_uri else None
    if image is not None:
        return _stored_program(pool, image_uri, image, command, args, env, note)
    if ctx.containers is not None:
        # neither the engine nor the image store has it: pulled, as `docker run` pulls it
        pulled, why = _engine_image(pool, image_uri, ctx, note) if image_uri else (None, "")
        if pulled is not None:
            return _container_program(image_uri, pulled, command, args, env, ctx, note)
        raise LaunchError(missing_image(pool, image_uri, ctx.containers.describe, why))
    if command:
        note(
            f"warning: workerpool{pool}: image {image_uri!r} is neither one of Vertex's "
            "prebuilt training images nor in the local image store; running its command on "
            "the host, in this machine's clean Python (build the image with `trainpool "
            "build-image DIR --local` to run it with its packages)"
        )
        return Program(_with_python(command + args), {}, env, python=_clean_python())
    raise LaunchError(
        f"workerPoolSpecs[{pool}].containerSpec.imageUri: {image_uri!r} is not in the local image "
        "store and the pool has no command to run on the host; make it available locally with "
        f"`trainpool build-image DIR --local` or `gcloud builds submit --tag {image_uri or 'IMAGE'}"
        " DIR` under `trainpool exec` (or give containerSpec.command)"
    )


def _stored_program(
    pool: int,
    image_uri: str,
    image: image_store.LocalImage,
    command: list[str],
    args: list[str],
    env: dict[str, str],
    note: Callable[[str], None],
) -> Program:
    """A pool that runs ``image`` of the local image store: its argv (``command`` and
    ``args`` over its ENTRYPOINT and CMD) in a copy of its files, in its environment."""
    if image.not_executed:
        note(
            f"workerpool{pool}: image {image_uri!r} from the local image store; these build "
            f"steps were not executed locally: {image.not_executed}"
        )
    argv = image.argv(command, args)
    if argv and argv[0] == str(image.python):
        argv[0] = REPLICA_PYTHON
    venv = image.python.parent.parent
    return Program(
        argv,
        image.env,
        env,
        context=image.context_dir,
        cwd=image.workdir,
        sites=replica_python.venv_sites(venv),
        python=f"the Python environment of local image {image_uri} ({venv})",
    )


def _container_program(
    image_uri: str,
    image: EngineImage,
    command: list[str],
    args: list[str],
    env: dict[str, str],
    ctx: JobContext,
    note: Callable[[str], None],
) -> Program:
    """A pool that runs as containers of the engine's ``image`` (what the job log says of an
    Artifact Registry name nobody pushed, said first)."""
    said = ctx.unpushed(image_uri) if ctx.unpushed is not None else ""
    if said:
        note(said)
    return Program(
        command + args,
        image.env,
        env,
        python=f"containers of {image_uri} ({image.digest})",
        container=PoolContainers(image, command, args),
    )


def missing_image(pool: int, image_uri: str, engine: str, why: str = "") -> str:
    """Why pool ``pool`` cannot run where an engine answers: no one has its image (``why``:
    why the engine could not have it)."""
    image = image_uri or "IMAGE"
    return (
        f"workerPoolSpecs[{pool}].containerSpec.imageUri: {image_uri!r} is not an image of the "
        f"container engine ({engine}), nor in the local image store, nor one of Vertex's "
        f"prebuilt training images, and it could not be pulled ({why or 'no image named'}); "
        f"accepted: an image the engine has: build it (`docker build -t {image} DIR`, or "
        f"`gcloud builds submit --tag {image} DIR` under `trainpool exec`), or `docker pull "
        f"{image}` / `docker load` it where it is published (or run with {SWITCH_ENV}=off to "
        "imitate it with its command on this machine)"
    )


def _clean_python() -> str:
    wheels = ", ".join(
        w.name.split("-")[0] + " " + w.name.split("-")[1] for w in replica_python.bundled_wheels()
    )
    return (
        f"this machine's clean Python {sys.version.split()[0]} ({replica_python.interpreter()}: "
        f"its standard library{', ' + wheels if wheels else ''}; none of the emulator's "
        "packages)"
    )


def _engine_image(
    pool: int, image_uri: str, ctx: JobContext, note: Callable[[str], None]
) -> tuple[EngineImage | None, str]:
    """The engine's image ``image_uri`` by :mod:`.engine_images`' rule (pulled where the
    network allows, else its offline stand-in, made now the first time: about a minute, said
    in the job log), and why not where it cannot be had."""
    if ctx.containers is None:
        return None, "no container engine"
    said = io.StringIO()
    try:
        ensure_image(ctx.containers, image_uri, said, f"workerpool{pool}: {image_uri}")
    except ImageUnavailable as err:
        return None, err.why
    except StandInFailed as err:
        raise LaunchError(
            f"workerPoolSpecs[{pool}]: the container stand-in of {image_uri} could not be built "
            f"on {ctx.containers.describe}: {err}"
        ) from err
    for line in said.getvalue().splitlines():
        note(line)
    return ctx.containers.image(image_uri), ""


def _package_container(
    pool: int, package: dict[str, Any], ctx: JobContext, note: Callable[[str], None]
) -> Program | None:
    """A ``pythonPackageSpec`` as Vertex runs it, in containers of its executor image (the
    engine's, or the container stand-in of a prebuilt one): each replica ``pip install``s the
    package URIs (``gs://`` read at ``/gcs``), then runs ``python -m MODULE ARGS``
    (``PythonPackageSpec``, custom_job.proto). None where the engine has no such image."""
    executor = package.get("executorImageUri", "")
    found = ctx.containers.image(executor) if ctx.containers and executor else None
    if found is None and executor:  # pulled, else its stand-in, as for a containerSpec
        found, _ = _engine_image(pool, executor, ctx, note)
    if found is None:
        return None
    uris = []
    for uri in package.get("packageUris", []):
        if not str(uri).startswith("gs://"):
            raise LaunchError(
                f"workerPoolSpecs[{pool}].pythonPackageSpec.packageUris: {uri!r}; accepted: "
                "gs:// URIs of the packages (Cloud Storage, read at /gcs in the container)"
            )
        uris.append(shlex.quote(VERTEX_MOUNT + "/" + str(uri)[len("gs://") :]))
    module = str(package.get("pythonModule", ""))
    install = (
        f"python3 -m pip install --quiet --no-warn-script-location {' '.join(uris)} && "
        if uris
        else ""
    )
    script = f'set -e; {install}exec python3 -m {shlex.quote(module)} "$@"'
    entrypoint = ["sh", "-c", script, "sh"]
    args = [str(a) for a in package.get("args", [])]
    return Program(
        entrypoint + args,
        found.env,
        _env_list(package.get("env")),
        python=f"containers of {executor} ({found.digest}), the package installed at each start",
        container=PoolContainers(found, entrypoint, args),
    )


def _package_program(
    pool: int, package: dict[str, Any], ctx: JobContext, note: Callable[[str], None]
) -> Program:
    executor = package.get("executorImageUri", "")
    prebuilt = prebuilt_image(executor)
    if prebuilt is not None:
        where = f"workerPoolSpecs[{pool}].pythonPackageSpec.executorImageUri"
        found = virtualenvs.ensure(ctx.home, prebuilt, note, where)
        python, sites, path = found.python, [found.site], [str(found.python.parent)]
        what = f"the stand-in of {executor} ({found.python.parent.parent.parent})"
        framework, aliases = found.framework, found.aliases
    else:
        note(
            f"workerpool{pool}: executorImageUri {executor!r} is not one of Vertex's prebuilt "
            "training images; this machine's clean Python stands in for it"
        )
        python, sites, path = replica_python.interpreter(), replica_python.bundled_wheels(), []
        what = _clean_python()
        framework, aliases = "", {}
    target = ctx.files.package_env(pool)
    installed = packages.install(
        package.get("packageUris", []),
        ctx.home.gcs,
        target,
        python,
        [str(s) for s in sites],
        note,
        aliases,
        framework,
    )
    env = _env_list(package.get("env"))
    if installed.path:
        env["PYTHONPATH"] = os.pathsep.join(
            [*map(str, installed.path), env.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep)
    read_only = []
    if installed.site is not None:
        sites = [installed.site, *sites]
        path = [str(installed.python.parent), *path]
        read_only = [target]
        what += f", with the pool's packages in {target}"
        note(
            f"workerpool{pool}: installed {package.get('packageUris', [])} with their "
            f"dependencies into {target}"
        )
    argv = [REPLICA_PYTHON, "-m", package["pythonModule"], *package.get("args", [])]
    return Program(argv, {}, env, path=path, sites=sites, read_only=read_only, python=what)


def _emulators_interpreter(command: str) -> bool:
    """Whether ``command`` (a path) is the emulator's own Python interpreter."""
    if not PYTHON.match(os.path.basename(command)):
        return False
    # not resolved: a virtualenv's python is a link to its base interpreter, and another
    # Python installation the command names (a virtualenv of the user's) is run as named
    where = os.path.dirname(os.path.abspath(command))
    bins = {os.path.join(p, "bin") for p in (sys.prefix, sys.base_prefix)}
    return where in bins or os.path.abspath(command) == os.path.abspath(sys.executable)


def _with_python(argv: list[str]) -> list[str]:
    """``argv`` with a leading Python (:data:`PYTHON`) made the replica's own."""
    if argv and ("/" not in argv[0] and PYTHON.match(argv[0]) or _emulators_interpreter(argv[0])):
        return [REPLICA_PYTHON, *argv[1:]]
    return argv
