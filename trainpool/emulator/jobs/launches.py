"""Turn a CustomJobSpec (REST JSON) into one :class:`Launch` per replica.

A pool runs, in this order of preference:
- ``pythonPackageSpec``: ``python -m MODULE ARGS`` with the package URIs on the path;
- ``containerSpec`` whose image is in the local image store: ``LocalImage.argv`` (``command``
  replaces ENTRYPOINT, ``args`` replace CMD, as Docker does; a leading ``python`` is the
  image's interpreter), in the image's working directory and environment;
- ``containerSpec`` with a ``command`` only: that command on the host, with a warning;
- otherwise the job cannot run: :class:`LaunchError` says how to make the image local.
A Reduction Server pool is in CLUSTER_SPEC but not started (its transport is an NCCL plugin).

A replica's environment is built up as Vertex's is, later layers winning:
:func:`trainpool.cluster_env.host.base_env` (the host minimum), the image's ``ENV``, the
pool's ``env``, then Vertex's variables (:func:`trainpool.cluster_env.build_env`) and the
emulator's own two (``TRAINPOOL_GCS_ROOT``, ``PYTHONUNBUFFERED``). Nothing else of the
emulator's environment reaches it. Each replica sees the local store at ``/gcs/`` where the
machine allows it (:mod:`trainpool.emulator.jobs.gcs_mount`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainpool.cluster_env import build_env, host, layout, local_hosts
from trainpool.cluster_env.gcs import LOCAL_ROOT_ENV
from trainpool.emulator.jobs import gcs_mount, packages
from trainpool.emulator.jobs.processes import Launch
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


@dataclass(frozen=True)
class Program:
    """How one pool runs: ``image_env`` is the image's ENV, ``pool_env`` the pool's ``env``."""

    argv: list[str]
    cwd: Path
    image_env: dict[str, str]
    pool_env: dict[str, str]


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
        env = host.base_env(ctx.files.replica_home(name), program.image_env)
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
        env[LOCAL_ROOT_ENV] = str(gcs_root)
        env["PYTHONUNBUFFERED"] = "1"
        argv = mount.wrap(program.argv, gcs_root)
        launches.append(Launch(name, pool, argv, env, program.cwd, ctx.files.replica_log(name)))
    return launches


def _env_list(items: list[dict[str, Any]] | None) -> dict[str, str]:
    return {str(item["name"]): str(item.get("value", "")) for item in items or []}


def program_for(
    pool: int, pool_spec: dict[str, Any], ctx: JobContext, note: Callable[[str], None]
) -> Program:
    """The command, working directory and extra environment of one pool."""
    package = pool_spec.get("pythonPackageSpec")
    if package:
        path_entries = packages.install(
            package.get("packageUris", []), ctx.home.gcs, ctx.files.package_site(pool)
        )
        env = _env_list(package.get("env"))
        env["PYTHONPATH"] = os.pathsep.join(
            [*map(str, path_entries), env.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep)
        argv = [sys.executable, "-m", package["pythonModule"], *package.get("args", [])]
        return Program(argv, ctx.files.dir, {}, env)
    container = pool_spec.get("containerSpec") or {}
    image_uri = container.get("imageUri", "")
    command = list(container.get("command", []))
    args = list(container.get("args", []))
    env = _env_list(container.get("env"))
    image = local_store.lookup(image_uri, ctx.home.root) if image_uri else None
    if image is not None:
        if image.not_executed:
            note(
                f"workerpool{pool}: image {image_uri!r} from the local image store; these build "
                f"steps were not executed locally: {image.not_executed}"
            )
        return Program(image.argv(command, args), image.workdir, image.env, env)
    if command:
        note(
            f"warning: workerpool{pool}: image {image_uri!r} is not in the local image store; "
            "running its command on the host"
        )
        return Program(_with_python(command + args, sys.executable), ctx.files.dir, {}, env)
    raise LaunchError(
        f"workerPoolSpecs[{pool}].containerSpec.imageUri: {image_uri!r} is not in the local image "
        "store and the pool has no command to run on the host; make it available locally with "
        "`trainpool build-image DIR --local` (or give containerSpec.command)"
    )


def _with_python(argv: list[str], python: str) -> list[str]:
    if argv and argv[0] in PYTHONS:
        return [python, *argv[1:]]
    return argv
