"""Turn a CustomJobSpec (REST JSON) into one :class:`Launch` per replica.

A pool runs, in this order of preference:
- ``pythonPackageSpec``: ``python -m MODULE ARGS``, its packages installed with their
  dependencies (:mod:`.packages`) over the executor image's environment: a prebuilt
  training image's local stand-in (:mod:`.environments`), else this machine's clean Python;
- ``containerSpec`` naming a prebuilt training image: its ``command`` and ``args`` in that
  image's environment (a leading ``python`` is the environment's);
- ``containerSpec`` whose image is in the local image store: ``LocalImage.argv`` (``command``
  replaces ENTRYPOINT, ``args`` replace CMD, as Docker does; a leading ``python`` is the
  image's interpreter), in a copy of the image's files and in its environment;
- ``containerSpec`` with a ``command`` only: that command on the host, in this machine's
  clean Python (never the emulator's), with a warning;
- otherwise the job cannot run: :class:`LaunchError` says how to make the image local.
A Reduction Server pool is in CLUSTER_SPEC but not started (its transport is an NCCL plugin).

Each replica works in files of its own, made fresh before every start (:mod:`.workdirs`):
its working directory, its HOME and its own Python, a layer over its pool's environment
(:mod:`.replica_python`), so what it installs reaches no other replica, no later start and
never the emulator. A replica's environment is built up as Vertex's is, later layers
winning: :func:`trainpool.cluster_env.base_env.base_env` (the host minimum), the image's
``ENV``, the pool's ``env``, then Vertex's variables (:func:`trainpool.cluster_env.build_env`),
the Cloud Storage clients' settings (:mod:`.storage_access`) and the emulator's own two
(``TRAINPOOL_GCS_ROOT``, ``PYTHONUNBUFFERED``). Nothing else of the emulator's environment
reaches it. Each replica sees the local store at ``/gcs/`` where the machine allows it
(:mod:`.gcs_mount`), and read-only: the stored images and environments, its pool's Python
and packages, and the emulator's own Python.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainpool.catalog import prebuilt_image
from trainpool.cluster_env import base_env, build_env, layout, local_hosts
from trainpool.cluster_env.gcs import LOCAL_ROOT_ENV
from trainpool.emulator.jobs import (
    environments,
    gcs_mount,
    packages,
    replica_python,
    storage_access,
    vertex_access,
    web_access,
)
from trainpool.emulator.jobs.processes import Launch
from trainpool.emulator.jobs.workdirs import Workdir, relocate
from trainpool.errors import InputError
from trainpool.home import Home, JobFiles
from trainpool.images import image_store

PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)?)?$")
"""A command that names a Python interpreter (``python3``): the image's, found on its PATH,
which is the replica's own Python here; so is the emulator's own interpreter named by its
path (``sys.executable``), which no replica runs."""
WEB_ACCESS = Path(web_access.__file__)
"""The script that serves a replica's shell (run with ``-I -S``: standard library only)."""
REPLICA_PYTHON = "<the replica's python>"
"""In a :class:`Program`'s argv: the replica's own Python (:mod:`.replica_python`)."""


class LaunchError(InputError):
    """A pool cannot be started locally; the message says why and what to do."""


@dataclass(frozen=True)
class JobContext:
    """What every replica of one job (or one trial) shares."""

    home: Home
    job_id: str
    files: JobFiles
    project: str
    region: str
    trial_id: str | None = None
    storage_env: Mapping[str, str] = field(default_factory=dict)
    """What points Cloud Storage clients at the door ({} when the emulator serves none)."""
    vertex_address: str = ""
    """This emulator's address, which replicas' Vertex AI clients are pointed at
    (:mod:`.vertex_access`; "" : not pointed)."""


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


def plan_launches(
    spec: dict[str, Any], ctx: JobContext, note: Callable[[str], None]
) -> list[Launch]:
    """One launch per replica of pools 0, 1, 2 (unless a Reduction Server) and 3."""
    hosts = local_hosts(spec)
    pools = layout.pool_specs(spec)
    programs: dict[int, Program] = {}
    launches = []
    gcs_root = ctx.home.gcs
    gcs_root.mkdir(parents=True, exist_ok=True)
    mount = gcs_mount.mount()
    if mount.why:
        note(f"/gcs is not available to replicas on this machine: {mount.why}")
    elif mount.read_only_why:
        note(f"the image store is writable by replicas on this machine: {mount.read_only_why}")
    if not ctx.storage_env:
        note(storage_access.NO_DOOR_NOTE)
    if ctx.vertex_address:
        note(
            vertex_access.NOTE.format(
                env="VERTEX_AI_EMULATOR_HOST", address=ctx.vertex_address, site=vertex_access.SITE
            )
        )
    stores = (ctx.home.images, ctx.home.environments, *emulator_python(ctx.home.root))
    bases: dict[int, replica_python.Base] = {}
    for pool, index in layout.replicas(spec):
        pool_spec = pools[pool]
        if pool == 2 and layout.is_reduction_server(pool_spec):
            if index == 0:
                note(
                    f"workerpool2 is a Reduction Server ({layout.image_uri(pool_spec)}): listed in "
                    "CLUSTER_SPEC but not started locally (its transport is an NCCL plugin)"
                )
            continue
        if pool not in programs:
            programs[pool] = program = program_for(pool, pool_spec, ctx, note)
            bases[pool] = (
                replica_python.make_base(ctx.files.pool_python(pool), program.sites)
                if program.read_only  # the job's own packages: a base of the job's own
                else replica_python.shared_base(ctx.home.environments / "bases", program.sites)
            )
            note(
                f"workerpool{pool}: {program.python}; each replica runs in a Python of its own "
                f"over it ({ctx.files.dir / 'python'}/<replica>/, and its HOME, fresh at every "
                "start): what a replica installs (pip install, pip install --user) is its own"
            )
        program = programs[pool]
        name = f"workerpool{pool}-{index}"
        # made before any replica starts: cloudml-hypertune's check-then-makedirs of this
        # folder races between replicas that share it (each has its own on Vertex)
        ctx.files.metric_file(name).parent.mkdir(parents=True, exist_ok=True)
        home = ctx.files.replica_home(name)
        layer = replica_python.Layer(ctx.files.replica_python(name), bases[pool])
        workdir = Workdir(ctx.files.replica_workdir(name), program.context, home, layer)
        argv, image_env, cwd = _placed(program, workdir.root)
        if argv and argv[0] == REPLICA_PYTHON:
            argv[0] = str(layer.python)
        env = base_env.base_env(home, image_env)
        rest = image_env.get("PATH") or base_env.DEFAULT_PATH
        env["PATH"] = os.pathsep.join([str(layer.bin), *program.path, rest])
        env.update(program.pool_env)
        env.update(
            build_env(
                spec,
                pool,
                index,
                hosts=hosts,
                trial_id=ctx.trial_id,
                job_id=ctx.job_id,
                project=ctx.project,
                region=ctx.region,
                metric_file=str(ctx.files.metric_file(name)),
            )
        )
        env.update(storage_access.storage_env(ctx.storage_env, ctx.project, home))
        env.update(vertex_access.vertex_env(ctx.vertex_address, spec, ctx.region, env))
        env[LOCAL_ROOT_ENV] = str(gcs_root)
        env["PYTHONUNBUFFERED"] = "1"
        log = ctx.files.replica_log(name)
        access = ""
        if spec.get("enableWebAccess"):
            socket_path = ctx.files.web_access(name)
            access = f"{web_access.SCHEME}{socket_path}"
            argv = [
                str(replica_python.interpreter()),
                "-I",
                "-S",
                str(WEB_ACCESS),
                str(socket_path),
                "--",
                *argv,
            ]
        read_only = (*stores, *program.read_only)
        if program.read_only:
            read_only += (bases[pool].root,)
        mounts = mount.mounts(gcs_root, read_only)
        launches.append(
            Launch(
                name,
                pool,
                argv,
                env,
                cwd,
                log,
                workdir=workdir,
                mounts=mounts,
                web_access=access,
                entries=ctx.files.replica_entries(name),
            )
        )
    if spec.get("enableWebAccess"):
        note(
            "enableWebAccess: each replica serves an interactive shell in its working directory "
            "and environment while it runs, at the address in web_access_uris (owner only; "
            "open one with `python -m trainpool.emulator.jobs.web_access connect URI`)"
        )
    return launches


def emulator_python(root: Path) -> list[Path]:
    """The emulator's own Python installation (its prefixes), unless the store lies in it."""
    kept = []
    for prefix in {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)}:
        resolved = prefix.resolve()
        if resolved != Path("/") and not root.resolve().is_relative_to(resolved):
            kept.append(resolved)
    return sorted(kept)


def _placed(program: Program, root: Path) -> tuple[list[str], dict[str, str], Path]:
    """The program's argv, image ENV and working directory with the stored context's paths
    moved to the replica's copy of it at ``root``."""
    if program.context is None:
        return list(program.argv), dict(program.image_env), root
    old = program.context
    argv = [relocate(arg, old, root) for arg in program.argv]
    env = {k: relocate(v, old, root) for k, v in program.image_env.items()}
    cwd = Path(relocate(str(program.cwd or old), old, root))
    return argv, env, cwd


def _env_list(items: list[dict[str, Any]] | None) -> dict[str, str]:
    return {str(item["name"]): str(item.get("value", "")) for item in items or []}


def program_for(
    pool: int, pool_spec: dict[str, Any], ctx: JobContext, note: Callable[[str], None]
) -> Program:
    """The command, files, Python and extra environment of one pool."""
    package = pool_spec.get("pythonPackageSpec")
    if package:
        return _package_program(pool, package, ctx, note)
    container = pool_spec.get("containerSpec") or {}
    image_uri = container.get("imageUri", "")
    command = list(container.get("command", []))
    args = list(container.get("args", []))
    env = _env_list(container.get("env"))
    prebuilt = prebuilt_image(image_uri) if image_uri else None
    if prebuilt is not None:
        if not command:
            raise LaunchError(
                f"workerPoolSpecs[{pool}].containerSpec.command: empty with the prebuilt "
                f"training image {image_uri!r}; accepted: the command to run in it (or a "
                "pythonPackageSpec with it as executorImageUri)"
            )
        where = f"workerPoolSpecs[{pool}].containerSpec.imageUri"
        found = environments.ensure(ctx.home, prebuilt, note, where)
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
        "`trainpool build-image DIR --local` (or give containerSpec.command)"
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


def _package_program(
    pool: int, package: dict[str, Any], ctx: JobContext, note: Callable[[str], None]
) -> Program:
    executor = package.get("executorImageUri", "")
    prebuilt = prebuilt_image(executor)
    if prebuilt is not None:
        where = f"workerPoolSpecs[{pool}].pythonPackageSpec.executorImageUri"
        found = environments.ensure(ctx.home, prebuilt, note, where)
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
