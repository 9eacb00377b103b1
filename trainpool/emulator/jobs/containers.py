"""Replicas as containers of their images, on a Docker-compatible engine (Docker, Podman).

On Vertex a replica is a container of its pool's image. Where a container engine answers,
so is it here: :func:`connect` finds the engine as the ``docker`` command and kfp.local's
``DockerRunner`` find it (``DOCKER_HOST``, else Docker's socket ``/var/run/docker.sock``,
else Podman's Docker-compatible socket), through docker-py, the Docker SDK for Python
that kfp.local and Kubeflow's trainer drive their containers with. ``TRAINPOOL_CONTAINERS=off``
keeps every replica a process of this machine.

A pool whose ``containerSpec.imageUri`` is an image the engine has (``docker build -t``,
``docker pull``, ``docker load``) runs as containers of it (:class:`ContainerRunner`),
as Vertex runs it:

- the image's ENTRYPOINT, CMD, WORKDIR, ENV and USER are the container's; ``command``
  replaces the ENTRYPOINT (and its CMD), ``args`` replace the CMD ("It overrides the
  entrypoint instruction in Dockerfile when provided", ``ContainerSpec`` in
  ``google/cloud/aiplatform/v1/custom_job.proto``; Google's "Configure container settings
  for custom training" page);
- the environment is the image's, then the pool's ``env``, then Vertex's variables
  (``CLUSTER_SPEC``, ``TF_CONFIG``, ``AIP_*``, ``CLOUD_ML_*``), then what points Google's
  clients at this emulator, as for a replica process (:mod:`.launches`);
- the network is this machine's, so the replicas reach one another at the loopback
  addresses of ``CLUSTER_SPEC`` and the emulator at its own; no other address is made;
- ``/gcs`` is the local store's buckets, read-write, as Cloud Storage FUSE shows them; the
  store itself, the job's own folder and Google's client hook are bound at their own paths
  (the first read-only), for what the environment names there (the CA bundle that trusts
  the emulator's HTTPS proxy, gcloud's and gsutil's configuration, the metric file);
- every line the container writes goes to the replica's log and becomes a log entry,
  as from a replica process (:mod:`.replica_guard`'s format);
- its memory is its machine type's (``machineSpec.machineType`` in the catalog), swap
  included, as a VM of that type has; a container the kernel kills for going over it ends
  137, its log and the job's error say it ran out of memory, in Vertex's words;
- stopping is SIGTERM, the grace period, then SIGKILL, as for a process; the exit status
  is the container's (128 + signal for a death by signal);
- a container is waited on before it is removed, never removed first (kfp.local's
  ``DockerRunner`` uses ``auto_remove`` and counts a container gone before ``wait()`` as
  a success, exit 0); an engine that goes away ends the replica 125, and the job FAILED
  (UNAVAILABLE), naming the engine and its address, without restarting it (a container
  cannot start without the engine); a job planned once it is gone fails the same way
  (:class:`EngineGone`);
- each container carries the labels :data:`STORE_LABEL` (this store), ``org.trainpool.job``
  and ``org.trainpool.replica``; the emulator that opens the store removes what an earlier one
  left (:meth:`ContainerRunner.clean_up`).

A pool whose image the engine does not have runs as processes of this machine that imitate
the image (:data:`~.runners.HOST_PROCESSES`) where the emulator knows how (Vertex's prebuilt
images, the local image store, :mod:`.programs`); the job log says which ran. An image no one
has fails the job at once, naming it and how to build it (:func:`.programs.missing_image`).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from trainpool.emulator.jobs import replica_guard
from trainpool.emulator.jobs.container_specs import EngineImage
from trainpool.emulator.jobs.processes import (
    TERMINATE_GRACE_S,
    Launch,
    ProcessId,
    Replica,
    output_loss,
)
from trainpool.emulator.jobs.runners import HOST_PROCESSES, ReplicaRunner

SWITCH_ENV = "TRAINPOOL_CONTAINERS"
"""``off`` (or ``0``, ``no``): never run a replica in a container."""
DOCKER_SOCKET = "/var/run/docker.sock"
PODMAN_SOCKETS = ("/run/podman/podman.sock", "{runtime}/podman/podman.sock")
STORE_LABEL = "org.trainpool.store"
"""The label every container of the emulator carries: its store's id (:func:`store_id`)."""
CALL_TIMEOUT_S = 60
"""docker-py's timeout for one call to the engine (never for following a container)."""
ENGINE_LOST = 125
"""The status of a replica whose engine went away (a container runtime's own failure)."""
OOM_STATUS = 137
NO_SPACE = "no space left on device"
"""What the engine, or a command in a container, says when a write found no room (lower case)."""


def store_id(root: Path) -> str:
    """A store's id in labels and names: a hash of its resolved path."""
    return hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:16]


def engine_url(environ: Mapping[str, str] | None = None) -> str | None:
    """Where the engine answers: ``DOCKER_HOST``, else the first socket that exists."""
    env = os.environ if environ is None else environ
    if env.get("DOCKER_HOST"):
        return env["DOCKER_HOST"]
    runtime = env.get("XDG_RUNTIME_DIR", f"/run/user/{os.getuid()}")
    for path in (DOCKER_SOCKET, *(p.format(runtime=runtime) for p in PODMAN_SOCKETS)):
        if os.path.exists(path):
            return f"unix://{path}"
    return None


class EngineGone(OSError):
    """The engine that answered when the emulator started answers no more; names it."""


class EngineDiskFull(OSError):
    """The disk of the engine's data (its images, its containers' files) is full; names it."""

    def __init__(self, engine: str, path: str, detail: str) -> None:
        super().__init__(
            errno.ENOSPC,
            f"No space left on the disk of the container engine's data {path} ({engine}): "
            f"{detail}. Free some space there (docker system prune: unused images and "
            "containers) and try again",
        )


class ContainerEngine:
    """A container engine that answered, and the images it has."""

    def __init__(self, client: Any, url: str) -> None:
        self.client = client
        self.url = url
        version = client.version()
        product = (
            "Podman" if "podman" in json.dumps(version.get("Components", "")).lower() else "Docker"
        )
        number, api = version.get("Version", "?"), version.get("ApiVersion", "?")
        self.describe = f"{product} Engine {number} (API {api}) at {url}"
        info = engine_info(client)
        self.gpu_runtime = gpu_runtime(info)
        """The engine's runtime that passes NVIDIA GPUs ("" where it has none)."""
        self.data_root = data_root(info)
        """Where the engine keeps its images and containers' files, when that folder is on
        this machine ("" otherwise: an engine on another machine, or one that does not say)."""

    def disk_full(self, detail: str) -> EngineDiskFull | None:
        """The disk of :attr:`data_root` when it is full (less than ``MIN_FREE_BYTES`` free,
        as for the store), named with ``detail``; None when it is not, or cannot be seen."""
        from trainpool.emulator.records.database import low_space

        free = low_space(self.data_root) if self.data_root else None
        if free is None:
            return None
        return EngineDiskFull(self.describe, self.data_root, f"{free} bytes free {detail}")

    def image(self, ref: str) -> EngineImage | None:
        """The image the engine has under ``ref`` (a name, ``NAME@sha256:...`` or an id); None
        when it has none (nothing is pulled). ``NAME:TAG@sha256:ID``, what a local build on
        the engine answers (:class:`trainpool.images.image_store_backend.EngineBackend`), is
        the image tagged ``NAME:TAG`` when its id is ``sha256:ID``. Raises
        :class:`EngineGone` when the engine no longer answers."""
        from docker import errors
        from requests import RequestException

        try:
            found = self.client.images.get(ref)
        except (errors.ImageNotFound, errors.NullResource, errors.APIError) as err:
            status = getattr(err, "status_code", 404)
            if isinstance(err, errors.APIError) and status not in (400, 404):
                raise
            # a name the engine cannot parse or does not have: not its image, unless it is
            # NAME:TAG@ID of an image tagged NAME:TAG
            name, at, digest = ref.partition("@")
            if not at or ":" not in name.rsplit("/", 1)[-1]:
                return None
            try:
                found = self.client.images.get(name)
            except (errors.ImageNotFound, errors.APIError):
                return None
            if found.id != digest:
                return None
        except RequestException as err:  # docker-py raises requests' own when none answers
            raise EngineGone(
                f"the container engine went away: {self.describe} does not answer ({err}); "
                "start it again, or set DOCKER_HOST to one that answers"
            ) from err
        config = found.attrs.get("Config") or {}
        env = dict(item.partition("=")[::2] for item in config.get("Env") or [])
        digests = found.attrs.get("RepoDigests") or []
        return EngineImage(
            ref=ref,
            id=found.id,
            digest=digests[0] if digests else found.id,
            user=config.get("User") or "",
            workdir=config.get("WorkingDir") or "",
            env=env,
            labels=dict(config.get("Labels") or {}),
        )


def engine_info(client: Any) -> dict[str, Any]:
    """``docker info`` of the engine; empty where it does not say."""
    try:
        return dict(client.info())
    except Exception:  # noqa: BLE001 - an engine that does not say
        return {}


def data_root(info: Mapping[str, Any]) -> str:
    """The engine's data folder (``docker info``'s DockerRootDir; Podman's GraphRoot) when it
    is a folder of this machine, else ""."""
    store = info.get("Store") if isinstance(info.get("Store"), dict) else {}
    found = str(info.get("DockerRootDir") or (store or {}).get("GraphRoot") or "")
    return found if found and os.path.isdir(found) else ""


def gpu_runtime(info: Mapping[str, Any]) -> str:
    """The runtime of the engine that passes NVIDIA GPUs to containers: ``nvidia`` where the
    NVIDIA Container Toolkit registered it (``docker info``'s ``Runtimes``; what ``docker run
    --gpus`` and docker-py's ``DeviceRequest`` need), else ""."""
    return "nvidia" if "nvidia" in (info.get("Runtimes") or {}) else ""


def connect(environ: Mapping[str, str] | None = None) -> tuple[ContainerEngine | None, str]:
    """The engine that answers, or None and why none does."""
    env = os.environ if environ is None else environ
    switch = env.get(SWITCH_ENV, "").strip().lower()
    if switch in ("off", "0", "no", "false"):
        return None, f"{SWITCH_ENV}={env[SWITCH_ENV]}"
    url = engine_url(env)
    if url is None:
        return None, (
            f"no container engine: DOCKER_HOST is not set and neither {DOCKER_SOCKET} nor "
            "Podman's socket exists"
        )
    try:
        import docker
    except ImportError:
        return (
            None,
            "the Docker SDK for Python is not installed (pip install 'trainpool[emulator]')",
        )
    try:
        client = docker.DockerClient(base_url=url, timeout=CALL_TIMEOUT_S, max_pool_size=64)
        client.ping()
        return ContainerEngine(client, url), ""
    except Exception as err:  # noqa: BLE001 - any failure to answer means no engine
        return None, f"no container engine answered at {url}: {err}"


class ContainerReplica(Replica):
    """A replica that is a container; ``pid`` is its first process on this machine."""

    def __init__(self, launch: Launch, container: Any, pid: int) -> None:
        super().__init__(launch, pid, None)  # no identity: nothing signals it as a process
        self.container = container


class _Lines:
    """One stream's bytes as log entries, a JSON line per line (:mod:`.replica_guard`'s)."""

    def __init__(self, stream: str, entries: IO[bytes] | None) -> None:
        self.stream, self.entries, self.pending = stream, entries, b""

    def feed(self, data: bytes, final: bool = False) -> OSError | None:
        if self.entries is None:
            return None
        out, self.pending = replica_guard.entry_lines(self.stream, self.pending + data, final)
        return _write(self.entries, out) if out else None


def _write(handle: IO[bytes], data: bytes) -> OSError | None:
    """Write and flush; a full disk drops it, as the guard's pumps do, and is returned."""
    try:
        handle.write(data)
        handle.flush()
    except OSError as err:
        return err
    return None


def _close(handle: IO[bytes]) -> OSError | None:
    """Close (the last flush included); a full disk is returned, the file closed all the same."""
    try:
        handle.close()
    except OSError as err:
        return err
    return None


class ContainerRunner:
    """Replicas with a :class:`ContainerLaunch` as containers; the others as ``fallback`` does."""

    def __init__(
        self, engine: ContainerEngine, root: Path, fallback: ReplicaRunner = HOST_PROCESSES
    ) -> None:
        self.engine = engine
        self.store = store_id(root)
        self.fallback = fallback
        self.name = f"containers on {engine.describe}, else {fallback.name}"

    def start(self, launch: Launch) -> Replica:
        spec = launch.container
        if spec is None:
            return self.fallback.start(launch)
        from docker import errors
        from docker.types import DeviceRequest, Mount

        launch.log.parent.mkdir(parents=True, exist_ok=True)
        log = open(launch.log, "ab")  # noqa: SIM115 - closed by the follower
        entries = None
        if launch.entries is not None:
            launch.entries.parent.mkdir(parents=True, exist_ok=True)
            entries = open(launch.entries, "ab")  # noqa: SIM115 - closed by the follower
        mounts = [
            Mount(target, source, type="bind", read_only=ro) for source, target, ro in spec.binds
        ]
        labels = {STORE_LABEL: self.store, **spec.labels}
        name = f"trainpool-{self.store[:8]}-{launch.name}-{uuid.uuid4().hex[:8]}"
        container = None
        try:
            container = self.engine.client.containers.create(
                spec.image.id,
                entrypoint=spec.entrypoint,
                command=spec.command,
                environment=launch.env,
                mounts=mounts,
                network_mode="host",
                labels=labels,
                name=name,
                detach=True,
                mem_limit=spec.memory_bytes,
                memswap_limit=spec.memory_bytes,  # no swap beyond it, as a VM has none
                device_requests=(
                    [DeviceRequest(count=spec.gpus, capabilities=[["gpu"]])] if spec.gpus else None
                ),
            )
            # attached before it starts, as `docker run` does: nothing it writes is missed
            stream = container.attach(stdout=True, stderr=True, stream=True, logs=True, demux=True)
            container.start()
            container.reload()
        except (errors.DockerException, OSError) as err:
            log.close()
            if entries is not None:
                entries.close()
            if container is not None:
                _remove(container)
            raise self._not_started(launch, spec.image, err) from err
        replica = ContainerReplica(launch, container, int(container.attrs["State"].get("Pid") or 0))
        threading.Thread(
            target=self._follow,
            args=(replica, stream, log, entries),
            name=f"container {launch.name}",
            daemon=True,
        ).start()
        return replica

    def _not_started(self, launch: Launch, image: EngineImage, err: Exception) -> OSError:
        """What a container of ``launch`` (of ``image``) that the engine could not start
        raises: the engine's disk full (:class:`EngineDiskFull`) when it is, else an
        ``OSError`` naming the image, each with the engine's words."""
        what = getattr(err, "explanation", None) or str(err)
        full = self.engine.disk_full(f"when {launch.name} was to start")
        if full is None and NO_SPACE in what.lower():
            full = EngineDiskFull(
                self.engine.describe,
                self.engine.data_root or "(not on this machine)",
                f"{launch.name} could not start: {what}",
            )
        if full is not None:
            return full
        return OSError(
            f"{launch.name}: {self.engine.describe} could not start a container of "
            f"{image.ref} ({image.digest}): {what}"
        )

    def _follow(
        self, replica: ContainerReplica, stream: Any, log: IO[bytes], entries: IO[bytes] | None
    ) -> None:
        """Copy the container's output until it ends, then its status; remove it; report."""
        container = replica.container
        lines = {"o": _Lines("o", entries), "e": _Lines("e", entries)}
        loss = replica_guard.Loss(lambda: os.fstat(log.fileno()).st_size)
        status = ENGINE_LOST
        try:
            for out, err in stream:
                for key, chunk in (("o", out), ("e", err)):
                    if chunk:
                        loss.note(_write(log, chunk), "log")
                        loss.note(lines[key].feed(chunk), "entries")
            status = int(container.wait()["StatusCode"])
            if status != 0:  # before it is removed: its files still hold the disk
                replica.disk_full = self.engine.disk_full(
                    f"when {replica.launch.name} exited with status {status}"
                )
            container.reload()
            if container.attrs["State"].get("OOMKilled"):
                status = OOM_STATUS
                replica.out_of_memory = True
                limit = replica.launch.container.memory_bytes if replica.launch.container else None
                what = f" (its limit: {limit / 2**30:.3g} GiB)" if limit else ""
                _write(log, f"[trainpool] the container was killed for memory{what}\n".encode())
        except Exception as err:  # noqa: BLE001 - the engine went away: the replica is lost
            replica.engine_lost = f"{self.engine.describe} went away ({err})"
            _write(log, f"[trainpool] {replica.engine_lost}\n".encode())
            status = ENGINE_LOST
        finally:
            try:
                for sink in lines.values():
                    loss.note(sink.feed(b"", final=True), "entries")
                for handle in (log, entries):  # a close flushes: the disk may refuse that too
                    if handle is not None:
                        loss.note(_close(handle), "log" if handle is log else "entries")
                if loss.lost is not None:
                    replica.output_lost = output_loss(replica.launch, loss.lost)
                _remove(container)
            finally:  # whatever happened, the replica has ended: the job never waits forever
                replica.ended(status)

    def alive(self, replica: Replica) -> bool:
        if not isinstance(replica, ContainerReplica):
            return self.fallback.alive(replica)
        return replica.exit_status() is None

    def kill(self, replica: Replica) -> None:
        if not isinstance(replica, ContainerReplica):
            self.fallback.kill(replica)
            return
        _signal(replica.container, "SIGKILL")

    def terminate(self, replicas: Sequence[Replica], grace_s: float | None = None) -> None:
        inside = [r for r in replicas if isinstance(r, ContainerReplica)]
        others = [r for r in replicas if not isinstance(r, ContainerReplica)]
        grace = TERMINATE_GRACE_S if grace_s is None else grace_s
        deadline = time.monotonic() + grace  # one grace for all, the processes' included
        for replica in inside:
            if replica.exit_status() is None:
                _signal(replica.container, "SIGTERM")
        if others:
            self.fallback.terminate(others, grace_s)
        for replica in inside:
            if replica.wait(max(0.0, deadline - time.monotonic())) is None:
                _signal(replica.container, "SIGKILL")
        for replica in inside:
            replica.wait(CALL_TIMEOUT_S)

    def clean_up(self, recorded: Sequence[ProcessId]) -> None:
        """What an earlier emulator of this store left: its processes and its containers."""
        self.fallback.clean_up(recorded)
        for container in self.engine.client.containers.list(
            all=True, filters={"label": f"{STORE_LABEL}={self.store}"}
        ):
            _remove(container)


def _signal(container: Any, name: str) -> None:
    from docker import errors
    from requests import RequestException

    try:
        container.kill(signal=name)
    except (errors.DockerException, RequestException):  # ended, removed, or the engine gone
        pass


def _remove(container: Any) -> None:
    from docker import errors
    from requests import RequestException

    try:
        container.remove(force=True)
    except (errors.DockerException, RequestException):  # the engine gone: docker-py raises
        pass  # requests' ConnectionError, no DockerException
