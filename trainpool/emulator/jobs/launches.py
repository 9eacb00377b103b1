"""Turn a CustomJobSpec (REST JSON) into one :class:`Launch` per replica.

How each pool runs (its command, files and Python) is a :class:`~.programs.Program`
(:mod:`.programs`). A Reduction Server pool is in CLUSTER_SPEC but not started (its
transport is an NCCL plugin).

Each replica works in files of its own, made fresh before every start (:mod:`.workdirs`):
its working directory, its HOME and its own Python, a layer over its pool's environment
(:mod:`.replica_python`), so what it installs reaches no other replica, no later start and
never the emulator. A replica's environment is built up as Vertex's is, later layers
winning: :func:`trainpool.cluster_env.base_env.base_env` (the host minimum), the image's
``ENV``, the pool's ``env``, then Vertex's variables (:func:`trainpool.cluster_env.build_env`),
the Cloud Storage clients' settings (:mod:`.storage_access`), the Vertex AI API's and every
other Google client's (:mod:`.vertex_access`: the HTTPS proxy, as under ``trainpool exec``)
and the emulator's own two
(``TRAINPOOL_GCS_ROOT``, ``PYTHONUNBUFFERED``). Nothing else of the emulator's environment
reaches it. Each replica sees the local store at ``/gcs/`` where the machine allows it
(:mod:`.gcs_mount`), and read-only: the stored images and stand-ins, its pool's Python
and packages, and the emulator's own Python.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from trainpool import catalog
from trainpool.cluster_env import base_env, build_env, layout, local_hosts
from trainpool.cluster_env.gcs import LOCAL_ROOT_ENV, VERTEX_MOUNT
from trainpool.emulator.jobs import (
    gcs_mount,
    replica_python,
    storage_access,
    vertex_access,
    web_access,
)
from trainpool.emulator.jobs.container_specs import ContainerLaunch
from trainpool.emulator.jobs.job_context import JobContext
from trainpool.emulator.jobs.processes import Launch
from trainpool.emulator.jobs.programs import REPLICA_PYTHON, Program, program_for
from trainpool.emulator.jobs.workdirs import Workdir, relocate
from trainpool.emulator.stand_ins import debian_bases

WEB_ACCESS = Path(web_access.__file__)
"""The script that serves a replica's shell (run with ``-I -S``: standard library only)."""


def _once(note: Callable[[str], None]) -> Callable[[str], None]:
    """``note`` that says each line once."""
    said: set[str] = set()

    def once(line: str) -> None:
        if line not in said:
            said.add(line)
            note(line)

    return once


def plan_launches(
    spec: dict[str, Any], ctx: JobContext, note: Callable[[str], None]
) -> list[Launch]:
    """One launch per replica of pools 0, 1, 2 (unless a Reduction Server) and 3. A note
    said already (of an image two pools share: "was not pushed") is not said again."""
    note = _once(note)
    hosts = local_hosts(spec)
    pools = layout.pool_specs(spec)
    ctx.home.gcs.mkdir(parents=True, exist_ok=True)
    mount = gcs_mount.mount()
    _job_notes(spec, ctx, mount, note)
    stores = (ctx.home.images, ctx.home.stand_ins, *emulator_python(ctx.home.root))
    programs: dict[int, tuple[Program, replica_python.Base | None]] = {}
    launches = []
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
            programs[pool] = _pool_program(pool, pool_spec, ctx, note)
        program, base = programs[pool]
        name = f"workerpool{pool}-{index}"
        # made before any replica starts: cloudml-hypertune's check-then-makedirs of this
        # folder races between replicas that share it (each has its own on Vertex)
        ctx.files.metric_file(name).parent.mkdir(parents=True, exist_ok=True)
        if program.container is not None:
            launches.append(_container_launch(spec, pool, index, hosts, ctx, program))
            continue
        assert base is not None
        read_only = (*stores, *program.read_only)
        if program.read_only:
            read_only += (base.root,)
        launches.append(
            _process_launch(spec, pool, index, hosts, ctx, program, base, mount, read_only)
        )
    return launches


def _process_launch(
    spec: dict[str, Any],
    pool: int,
    index: int,
    hosts: dict[int, list[str]],
    ctx: JobContext,
    program: Program,
    base: replica_python.Base,
    mount: gcs_mount.Mount,
    read_only: tuple[Path, ...],
) -> Launch:
    """Replica ``index`` of ``pool`` as a process of the host: its own working directory
    and Python (a layer over ``base``), Vertex's variables, ``mount``'s mounts (``/gcs``,
    and ``read_only`` bound read-only); web access when the job asks it."""
    name = f"workerpool{pool}-{index}"
    home = ctx.files.replica_home(name)
    layer = replica_python.Layer(ctx.files.replica_python(name), base)
    workdir = Workdir(ctx.files.replica_workdir(name), program.context, home, layer)
    argv, image_env, cwd = _placed(program, workdir.root)
    if argv and argv[0] == REPLICA_PYTHON:
        argv[0] = str(layer.python)
    env = replica_env(spec, pool, index, hosts, ctx, program, layer, image_env, home)
    access = ""
    if spec.get("enableWebAccess"):
        access, argv = _with_web_access(ctx, name, argv)
    return Launch(
        name,
        pool,
        argv,
        env,
        cwd,
        ctx.files.replica_log(name),
        workdir=workdir,
        mounts=mount.mounts(ctx.home.gcs, read_only),
        web_access=access,
        entries=ctx.files.replica_entries(name),
    )


def _job_notes(
    spec: dict[str, Any], ctx: JobContext, mount: gcs_mount.Mount, note: Callable[[str], None]
) -> None:
    """What the job log says once of every replica: /gcs, the storage door, the API, the
    replicas' shells."""
    if ctx.containers is None:
        note(
            f"replicas run as processes of this machine that imitate their images "
            f"({ctx.no_containers or 'no container engine'})"
        )
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
        note(vertex_access.proxy_note(ctx))
    if spec.get("enableWebAccess"):
        note(
            "enableWebAccess: each replica serves an interactive shell in its working directory "
            "and environment while it runs, at the address in web_access_uris (owner only; "
            "open one with `python -m trainpool.emulator.jobs.web_access connect URI`)"
        )


def _pool_program(
    pool: int, pool_spec: dict[str, Any], ctx: JobContext, note: Callable[[str], None]
) -> tuple[Program, replica_python.Base | None]:
    """How pool ``pool`` runs, and the read-only Python its replicas' own layers go over
    (None for containers: the image's Python is theirs)."""
    program = program_for(pool, pool_spec, ctx, note)
    if program.container is not None:
        assert ctx.containers is not None
        note(
            f"workerpool{pool}: each replica is a container of {program.container.image.ref} "
            f"({program.container.image.digest}) on {ctx.containers.describe}"
        )
        labels = program.container.image.labels
        asked = accelerators(pool_spec)
        if asked:
            kind = pool_spec["machineSpec"]["acceleratorType"]
            note(
                f"workerpool{pool}: {asked} {kind} asked: {asked} of this machine's GPUs go to "
                f"each container ({ctx.containers.gpu_runtime} runtime of the engine)"
                if ctx.containers.gpu_runtime
                else f"workerpool{pool}: {asked} {kind} asked, and the engine has no GPU runtime "
                "(the NVIDIA Container Toolkit's nvidia): its containers run without GPUs"
            )
        if debian_bases.LABEL in labels:  # built FROM a stand-in: its labels are inherited
            note(
                f"workerpool{pool}: {program.container.image.ref} is built on the stand-in of "
                f"{labels[debian_bases.LABEL]} made offline from Debian's packages, which differs "
                f"from the real image: {labels.get(debian_bases.DIFFERENCE_LABEL, '?')}"
            )
        return program, None
    base = (
        replica_python.make_base(ctx.files.pool_python(pool), program.sites)
        if program.read_only  # the job's own packages: a base of the job's own
        else replica_python.shared_base(ctx.home.stand_ins / "bases", program.sites)
    )
    note(
        f"workerpool{pool}: {program.python}; each replica runs in a Python of its own "
        f"over it ({ctx.files.dir / 'python'}/<replica>/, and its HOME, fresh at every "
        "start): what a replica installs (pip install, pip install --user) is its own"
    )
    return program, base


def replica_env(
    spec: dict[str, Any],
    pool: int,
    index: int,
    hosts: dict[int, list[str]],
    ctx: JobContext,
    program: Program,
    layer: replica_python.Layer,
    image_env: dict[str, str],
    home: Path,
) -> dict[str, str]:
    """The environment of replica ``index`` of ``pool``, built up as Vertex's is, later layers
    winning (see the module): the host minimum, the image's ``ENV``, the pool's ``env``,
    Vertex's variables, the Cloud Storage clients', the Vertex AI API's and every other Google
    client's, and the emulator's own two."""
    name = f"workerpool{pool}-{index}"
    env = base_env.base_env(home, image_env)
    rest = image_env.get("PATH") or base_env.DEFAULT_PATH
    env["PATH"] = os.pathsep.join([str(layer.bin), *program.path, rest])
    env.update(program.pool_env)
    env.update(vertex_variables(spec, pool, index, hosts, ctx))
    env.update(storage_access.storage_env(ctx.storage_env, ctx.project, home))
    env.update(vertex_access.vertex_env(ctx.vertex_address, spec, ctx.region, env))
    env.update(vertex_access.https_env(ctx, name, env))
    env[LOCAL_ROOT_ENV] = str(ctx.home.gcs)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _with_web_access(ctx: JobContext, name: str, argv: list[str]) -> tuple[str, list[str]]:
    """The URI of the replica's shell (``enableWebAccess``) and its argv run behind it."""
    socket_path = ctx.files.web_access(name)
    wrapped = [
        str(replica_python.interpreter()),
        "-I",
        "-S",
        str(WEB_ACCESS),
        str(socket_path),
        "--",
        *argv,
    ]
    return f"{web_access.SCHEME}{socket_path}", wrapped


def emulator_python(root: Path) -> list[Path]:
    """The emulator's own Python installation (its prefixes), unless the store lies in it."""
    store = root.resolve()
    return [p for p in _prefixes() if p != Path("/") and not store.is_relative_to(p)]


@cache
def _prefixes() -> tuple[Path, ...]:
    """This process's Python prefixes, resolved once: each ``resolve()`` is a ``stat`` per
    folder of the path, and every replica's start asked again (a system call gives up the
    GIL, and on a busy emulator waits for it again)."""
    found = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return tuple(sorted(found))


def _placed(program: Program, root: Path) -> tuple[list[str], dict[str, str], Path]:
    """The program's argv, image ENV and working directory with the stored context's paths
    moved to the replica's copy of it at ``root`` (its working directory always in it)."""
    if program.context is None:
        return list(program.argv), dict(program.image_env), root
    old = program.context
    argv = [relocate(arg, old, root) for arg in program.argv]
    env = {k: relocate(v, old, root) for k, v in program.image_env.items()}
    cwd = program.cwd if program.cwd is not None and program.cwd.is_relative_to(old) else old
    # a WORKDIR outside the image's own files (none: "/") is the replica's own copy, as a
    # container's "/" is its own; never a folder of this machine that replicas would share
    return argv, env, Path(relocate(str(cwd), old, root))


def _container_launch(
    spec: dict[str, Any],
    pool: int,
    index: int,
    hosts: dict[int, list[str]],
    ctx: JobContext,
    program: Program,
) -> Launch:
    """Replica ``index`` of ``pool`` as a container of its image (:mod:`.containers`): the
    image's environment, then the pool's ``env``, Vertex's variables and what points Google's
    clients at the emulator, as for a process; its files at the paths those variables name."""
    run = program.container
    assert run is not None
    name = f"workerpool{pool}-{index}"
    home = ctx.files.replica_home(name)
    home.mkdir(parents=True, exist_ok=True)
    env = dict(program.pool_env)
    env.update(vertex_variables(spec, pool, index, hosts, ctx))
    given = storage_access.storage_env(ctx.storage_env, ctx.project, home)
    env.update(given)
    path = {"PYTHONPATH": env.get("PYTHONPATH", program.image_env.get("PYTHONPATH", ""))}
    for more in (
        vertex_access.vertex_env(ctx.vertex_address, spec, ctx.region, path),
        vertex_access.https_env(ctx, name, {**program.image_env, **env}),
    ):
        env.update(more)
        given.update(more)
    env[LOCAL_ROOT_ENV] = VERTEX_MOUNT
    env["PYTHONUNBUFFERED"] = "1"
    binds = [
        (str(ctx.home.gcs), VERTEX_MOUNT, False),
        (str(ctx.home.root.resolve()), str(ctx.home.root.resolve()), True),
        (str(ctx.files.dir.resolve()), str(ctx.files.dir.resolve()), False),
    ]
    binds += [(p, p, True) for p in outside_paths(given, [b[0] for b in binds])]
    labels = {"org.trainpool.job": ctx.job_id, "org.trainpool.replica": name}
    if ctx.trial_id:
        labels["org.trainpool.trial"] = str(ctx.trial_id)
    return Launch(
        name,
        pool,
        [*run.command, *run.args],
        env,
        ctx.files.dir,
        ctx.files.replica_log(name),
        entries=ctx.files.replica_entries(name),
        container=ContainerLaunch(
            run.image,
            entrypoint=run.command or None,
            command=run.args or None,
            binds=tuple(binds),
            labels=labels,
            memory_bytes=_machine_memory(spec, pool),
            gpus=(
                accelerators(layout.pool_specs(spec)[pool] or {})
                if ctx.containers and ctx.containers.gpu_runtime
                else 0
            ),
        ),
    )


def accelerators(pool_spec: dict[str, Any]) -> int:
    """A pool's ``machineSpec.acceleratorCount`` (0 for none)."""
    machine = pool_spec.get("machineSpec") or {}
    return int(machine.get("acceleratorCount") or 0) if machine.get("acceleratorType") else 0


def _machine_memory(spec: dict[str, Any], pool: int) -> int | None:
    """The memory of pool ``pool``'s machine type in bytes (the catalog's GB are GiB, as
    Compute Engine's are); None for a type the catalog does not know."""
    machine_type = ((layout.pool_specs(spec)[pool] or {}).get("machineSpec") or {}).get(
        "machineType", ""
    )
    try:
        return int(catalog.machine(machine_type).memory_gb * 2**30)
    except catalog.UnknownName:
        return None


def outside_paths(env: dict[str, str], bound: list[str]) -> list[str]:
    """The existing paths of this machine that ``env``'s values name (as a path or a
    ``PATH``-like list) outside every folder of ``bound``: bound at their own paths too."""
    found: dict[str, None] = {}
    for value in env.values():
        for part in value.split(os.pathsep):
            if not os.path.isabs(part) or not os.path.exists(part):
                continue
            real = os.path.realpath(part)
            if any(real == b or real.startswith(b.rstrip("/") + "/") for b in bound):
                continue
            found[real] = None
    return sorted(found)


def vertex_variables(
    spec: dict[str, Any], pool: int, index: int, hosts: dict[int, list[str]], ctx: JobContext
) -> dict[str, str]:
    """Vertex's variables of replica ``index`` of ``pool`` (CLUSTER_SPEC, TF_CONFIG, AIP_*,
    CLOUD_ML_*), its metric file the job's own."""
    return build_env(
        spec,
        pool,
        index,
        hosts=hosts,
        trial_id=ctx.trial_id,
        job_id=ctx.job_id,
        project=ctx.project,
        region=ctx.region,
        metric_file=str(ctx.files.metric_file(f"workerpool{pool}-{index}")),
    )
