"""Turn a CustomJobSpec (REST JSON) into one :class:`Launch` per replica.

A pool runs, in this order of preference:
- ``pythonPackageSpec``: ``python -m MODULE ARGS``, its packages installed with their
  dependencies (:mod:`.packages`) over the executor image's environment: a prebuilt
  training image's local stand-in (:mod:`.environments`), else the emulator's own Python;
- ``containerSpec`` naming a prebuilt training image: its ``command`` and ``args`` in that
  image's environment (a leading ``python`` is the environment's);
- ``containerSpec`` whose image is in the local image store: ``LocalImage.argv`` (``command``
  replaces ENTRYPOINT, ``args`` replace CMD, as Docker does; a leading ``python`` is the
  image's interpreter), in a copy of the image's files and in its environment;
- ``containerSpec`` with a ``command`` only: that command on the host, with a warning;
- otherwise the job cannot run: :class:`LaunchError` says how to make the image local.
A Reduction Server pool is in CLUSTER_SPEC but not started (its transport is an NCCL plugin).

Each replica works in a directory of its own, made fresh before every start
(:mod:`.workdirs`). A replica's environment is built up as Vertex's is, later layers
winning: :func:`trainpool.cluster_env.host.base_env` (the host minimum), the image's
``ENV``, the pool's ``env``, then Vertex's variables (:func:`trainpool.cluster_env.build_env`),
the Cloud Storage clients' settings (:mod:`.storage_access`) and the emulator's own two
(``TRAINPOOL_GCS_ROOT``, ``PYTHONUNBUFFERED``). Nothing else of the emulator's environment
reaches it. Each replica sees the local store at ``/gcs/`` where the machine allows it
(:mod:`.gcs_mount`), and the stored images and environments read-only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainpool.catalog import prebuilt_image
from trainpool.cluster_env import build_env, host, layout, local_hosts
from trainpool.cluster_env.gcs import LOCAL_ROOT_ENV
from trainpool.emulator.jobs import environments, gcs_mount, packages, storage_access
from trainpool.emulator.jobs.processes import Launch
from trainpool.emulator.jobs.workdirs import Workdir, relocate
from trainpool.errors import InputError
from trainpool.home import Home, JobFiles
from trainpool.images import local_store

PYTHONS = ("python", "python3")


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
    """Directories put first on PATH (an environment's ``bin``)."""


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
    mounts = mount.mounts(gcs_root, (ctx.home.images, ctx.home.environments))
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
            programs[pool] = program_for(pool, pool_spec, ctx, note)
        program = programs[pool]
        name = f"workerpool{pool}-{index}"
        # made before any replica starts: cloudml-hypertune's check-then-makedirs of this
        # folder races between replicas that share it (each has its own on Vertex)
        ctx.files.metric_file(name).parent.mkdir(parents=True, exist_ok=True)
        home = ctx.files.replica_home(name)
        workdir = Workdir(ctx.files.replica_workdir(name), program.context)
        argv, image_env, cwd = _placed(program, workdir.root)
        env = host.base_env(home, image_env)
        if program.path:
            env["PATH"] = os.pathsep.join([*program.path, env["PATH"]])
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
        env[LOCAL_ROOT_ENV] = str(gcs_root)
        env["PYTHONUNBUFFERED"] = "1"
        log = ctx.files.replica_log(name)
        entries = ctx.files.replica_entries(name)
        launches.append(
            Launch(name, pool, argv, env, cwd, log, workdir=workdir, mounts=mounts, entries=entries)
        )
    return launches


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
    """The command, files and extra environment of one pool."""
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
        argv = _with_python(command + args, str(found.python))
        return Program(argv, {}, env, path=[str(found.python.parent)])
    image = local_store.lookup(image_uri, ctx.home.root) if image_uri else None
    if image is not None:
        if image.not_executed:
            note(
                f"workerpool{pool}: image {image_uri!r} from the local image store; these build "
                f"steps were not executed locally: {image.not_executed}"
            )
        argv = image.argv(command, args)
        return Program(argv, image.env, env, context=image.context_dir, cwd=image.workdir)
    if command:
        note(
            f"warning: workerpool{pool}: image {image_uri!r} is not in the local image store; "
            "running its command on the host"
        )
        return Program(_with_python(command + args, sys.executable), {}, env)
    raise LaunchError(
        f"workerPoolSpecs[{pool}].containerSpec.imageUri: {image_uri!r} is not in the local image "
        "store and the pool has no command to run on the host; make it available locally with "
        "`trainpool build-image DIR --local` (or give containerSpec.command)"
    )


def _package_program(
    pool: int, package: dict[str, Any], ctx: JobContext, note: Callable[[str], None]
) -> Program:
    executor = package.get("executorImageUri", "")
    prebuilt = prebuilt_image(executor)
    if prebuilt is not None:
        where = f"workerPoolSpecs[{pool}].pythonPackageSpec.executorImageUri"
        found = environments.ensure(ctx.home, prebuilt, note, where)
        python, sites, path = found.python, [str(found.site)], [str(found.python.parent)]
    else:
        note(
            f"workerpool{pool}: executorImageUri {executor!r} is not one of Vertex's prebuilt "
            "training images; the emulator's own Python and packages stand in for it"
        )
        python, sites, path = Path(sys.executable), local_store.host_site_dirs(), []
    installed = packages.install(
        package.get("packageUris", []), ctx.home.gcs, ctx.files.package_env(pool), python, sites
    )
    env = _env_list(package.get("env"))
    if installed.path:
        env["PYTHONPATH"] = os.pathsep.join(
            [*map(str, installed.path), env.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep)
    if installed.python != python:
        path = [str(installed.python.parent), *path]
        note(
            f"workerpool{pool}: installed {package.get('packageUris', [])} with their "
            f"dependencies into {installed.python.parent.parent}"
        )
    argv = [str(installed.python), "-m", package["pythonModule"], *package.get("args", [])]
    return Program(argv, {}, env, path=path)


def _with_python(argv: list[str], python: str) -> list[str]:
    if argv and argv[0] in PYTHONS:
        return [python, *argv[1:]]
    return argv
