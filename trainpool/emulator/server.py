"""The emulator's gRPC server, one per root: it wires the records, the job engine and the
services, and serves them where :mod:`trainpool.emulator.listen` says.

``SERVICES`` lists the modules that serve an API; each exposes a ``handler`` that takes what
that service needs, and :func:`_handlers` is the wiring: it makes the parts several services
share once (the persistent resources, ML Metadata, the Tensorboards, the pipeline runs, the
schedule firer), in the order their stop hooks need, and hands each service its own. The
server holds the root's lock (:mod:`trainpool.emulator.root_lock`) from before recovery
until it stops.
"""

from __future__ import annotations

import logging
from concurrent import futures
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

import grpc
from google.cloud.aiplatform_v1.types import custom_job as cj

from trainpool.emulator import listen, private_root, root_lock
from trainpool.emulator.api import operations_service, resource_manager, service_usage
from trainpool.emulator.api.rpc import Service, close_log, open_log
from trainpool.emulator.api.unserved import Unserved
from trainpool.emulator.api.versions import BetaHandler, Twins
from trainpool.emulator.artifact_registry import artifact_registry
from trainpool.emulator.builds import cloud_build
from trainpool.emulator.clock import Clock
from trainpool.emulator.cloud_logging import logging_service
from trainpool.emulator.cloud_storage.access import DoorKey, new_secret
from trainpool.emulator.cloud_storage.bodies import DEFAULT_LIMIT
from trainpool.emulator.cloud_storage.server import StorageServer, serve
from trainpool.emulator.faults.config import Faults
from trainpool.emulator.faults.interceptor import FaultInterceptor
from trainpool.emulator.jobs import faults_service, job_service, local_service
from trainpool.emulator.jobs.manager import JobManager, start_job_manager
from trainpool.emulator.jobs.quota import default_limit, parse_limit
from trainpool.emulator.metadata import metadata_service
from trainpool.emulator.metadata.metadata_records import MetadataRecords
from trainpool.emulator.model_registry import model_service
from trainpool.emulator.persistent import persistent_resource_service
from trainpool.emulator.persistent.resources import Lives
from trainpool.emulator.pipeline_jobs import pipeline_service
from trainpool.emulator.pipeline_jobs.runs import start_runs
from trainpool.emulator.proxy import certs
from trainpool.emulator.proxy.server import ProxyServer
from trainpool.emulator.rest.door import RestDoor
from trainpool.emulator.schedules import clock_service, schedule_service
from trainpool.emulator.schedules.firer import Firer, start_firer
from trainpool.emulator.state import EmulatorState
from trainpool.emulator.sweeps import vizier_service
from trainpool.emulator.tensorboards import tensorboard_service
from trainpool.emulator.tensorboards.tensorboard_records import TensorboardRecords
from trainpool.emulator_client import Served
from trainpool.redirect.files import write_private

SERVICES: tuple[ModuleType, ...] = (
    job_service,
    pipeline_service,
    model_service,
    schedule_service,
    metadata_service,
    tensorboard_service,
    persistent_resource_service,
    vizier_service,
    operations_service,
    logging_service,
    cloud_build,
    resource_manager,
    service_usage,
    artifact_registry,
    faults_service,
    local_service,
    clock_service,
)
WORKERS = 8
"""gRPC handler threads, and the REST door's calls handled at once. Handlers are short (one
SQLite statement or a few) and share one GIL with each other and the job engine's threads:
more threads runnable at once make each wait longer for it, and a call beyond these waits in
gRPC's queue (no thread) or, over REST, on the door's semaphore. Far fewer are
worse again: a call holds its thread while its request arrives. ``benchmarks/bench_load.py``
measures it; its figures for 4, 8, 12 and 32 threads are on the benchmarks page
(docs/reference/benchmarks.md, "The emulator under load"). The few calls that wait
(AdvanceClock with wait_for_runs, Preempt) hold one each."""
PORT_WARNING = (
    "the emulator listens on {address}: any local user can reach this port and have the "
    "emulator run code as you (containerSpec.command); leave --port off on a shared machine"
)
_log = logging.getLogger("trainpool.emulator")


class Emulator:
    """A running emulator: ``address`` is ``unix:<root>/emulator.sock`` (or
    ``127.0.0.1:PORT`` when started with a port); ``storage_address`` is
    ``http://127.0.0.1:PORT/<secret>`` when it serves the Cloud Storage JSON API (the
    default; else None), what ``STORAGE_EMULATOR_HOST`` is set to; ``storage_env()`` the
    whole environment for google-cloud-storage and gcloud; ``stop()`` ends it."""

    def __init__(
        self,
        state: EmulatorState,
        manager: JobManager,
        firer: Firer,
        server: grpc.Server,
        lock: root_lock.RootLock,
        storage: StorageServer | None = None,
        log: logging.Handler | None = None,
        rest: RestDoor | None = None,
        proxy: ProxyServer | None = None,
    ) -> None:
        self.state = state
        self.manager = manager
        self.firer = firer
        """The schedule firer (:meth:`advance_clock` fires through it)."""
        self.root = state.root
        self.address = state.address
        self.port = int(self.address.rsplit(":", 1)[1]) if self.address[0].isdigit() else None
        self.storage_address = state.storage_address
        self.rest_address = rest.address if rest is not None else None
        self.proxy_address = proxy.address if proxy is not None else None
        self._server = server
        self._storage = storage
        self._rest = rest
        self._proxy = proxy
        self._lock = lock
        self._log = log
        self._stopped = False

    def close(self, grace_s: float = 1.0) -> None:
        """Stop serving, stop every running job (marked FAILED), close the database,
        remove the socket, release the root."""
        if self._stopped:
            return
        self._stopped = True
        if self._storage is not None:
            self._storage.close()
        if self._rest is not None:
            self._rest.close()
        if self._proxy is not None:
            self._proxy.close()
        self._server.stop(grace_s).wait()
        try:
            self.state.close()
        finally:
            if self._log is not None:
                close_log(self._log)
            listen.forget(self.address)
            self._lock.release()

    def storage_env(self) -> dict[str, str]:
        """``STORAGE_EMULATOR_HOST`` and gcloud's settings for the storage door ({} if none)."""
        return self.state.storage_env()

    @property
    def served(self) -> Served:
        """What this emulator serves, as :func:`trainpool.emulator_client.served_by` asks
        it of one running elsewhere."""
        return Served(
            self.state.home, self.storage_env(), self.rest_address or "", self.proxy_address or ""
        )

    def preempt(self, job_name: str) -> cj.CustomJob:
        """Preempt RUNNING CustomJob ``job_name`` as Compute Engine reclaims Spot VMs, and
        return it ended (FAILED, STOCKOUT); see
        :func:`trainpool.emulator.jobs.faults_service.preempt` (it raises
        ``trainpool.emulator.api.rpc.RpcError``)."""
        return faults_service.preempt(self.manager, job_name)

    @property
    def clock(self) -> Clock:
        """The emulator's clock (:mod:`trainpool.emulator.clock`): ``.now()`` is its time."""
        return self.state.clock

    def advance_clock(
        self,
        by: timedelta | None = None,
        to: datetime | None = None,
        wait_for_runs: bool = False,
        wait_timeout_s: float = clock_service.DEFAULT_WAIT_S,
    ) -> clock_service.AdvanceClockResponse:
        """Move the clock ``by`` a duration or ``to`` a time through every schedule fire time
        on the way (:func:`trainpool.emulator.schedules.clock_service.advance`); with
        ``wait_for_runs``, return once the schedules' runs have ended."""
        if (by is None) == (to is None):
            raise ValueError("advance_clock: give one of by (a timedelta) and to (a datetime)")
        request = clock_service.AdvanceClockRequest(wait_for_runs=wait_for_runs)
        if by is not None:
            request.by = by
        if to is not None:
            request.to = to
        request.wait_timeout = timedelta(seconds=wait_timeout_s)
        return clock_service.advance(self.state, self.firer, request)

    def wait(self) -> None:
        """Block until the server stops."""
        self._server.wait_for_termination()

    def __enter__(self) -> Emulator:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _handlers(
    state: EmulatorState, manager: JobManager
) -> tuple[list[grpc.GenericRpcHandler], Firer]:
    """Every service's gRPC handler, then the v1beta1 twins of the Vertex AI ones, then
    :class:`Unserved`, and the schedule firer; the services are kept in ``state.services``
    (and the twins in ``state.twins``) for the other doors. The wiring: each service is
    handed what it needs, the parts several share made here once."""
    lives = Lives(state, manager)
    metadata = MetadataRecords(state)
    tensorboards = TensorboardRecords(state)
    runs = start_runs(state, manager, metadata)
    firer = start_firer(state, runs)  # after the runs: it stops first, then they do
    wired = {
        job_service: job_service.handler(state, manager, lives, metadata),
        pipeline_service: pipeline_service.handler(state, manager, runs, lives),
        model_service: model_service.handler(state),
        schedule_service: schedule_service.handler(state, firer),
        metadata_service: metadata_service.handler(state, metadata),
        tensorboard_service: tensorboard_service.handler(state, tensorboards),
        persistent_resource_service: persistent_resource_service.handler(state, lives),
        vizier_service: vizier_service.handler(state),
        operations_service: operations_service.handler(state),
        logging_service: logging_service.handler(state),
        cloud_build: cloud_build.handler(state, manager.containers),
        resource_manager: resource_manager.handler(state),
        service_usage: service_usage.handler(state),
        artifact_registry: artifact_registry.handler(state),
        faults_service: faults_service.handler(state, manager),
        local_service: local_service.handler(state, manager),
        clock_service: clock_service.handler(state, firer),
    }
    assert list(wired) == list(SERVICES), "every service in SERVICES is wired, in its order"
    built = list(wired.values())
    services = [h for h in built if isinstance(h, Service)]
    state.services = {s.name: s for s in services}
    state.twins = Twins(state.services)
    raw = [h for h in built if not isinstance(h, Service)]
    handlers = [
        *(s.grpc_handler() for s in services),
        *raw,
        BetaHandler(state.twins),
        Unserved(state.services),
    ]
    return handlers, firer


def _proxy(state: EmulatorState, door: StorageServer | None, rest: RestDoor) -> ProxyServer:
    """The HTTPS proxy (:mod:`trainpool.emulator.proxy`): Cloud Storage's hosts to the
    storage door, every other Google API host to the REST door; its authority's bundle
    written to ``Home.ca_bundle``."""
    made = certs.make(str(state.root))
    certs.write_bundle(state.home.ca_bundle, made.authority_pem)
    storage_hosts = ("storage.googleapis.com", "www.googleapis.com")

    def serve_http(sock: Any, client: tuple[str, int], host: str) -> None:
        if door is not None and host in storage_hosts:
            door.RequestHandlerClass(sock, client, door)
        else:
            rest.RequestHandlerClass(sock, client, rest)

    return ProxyServer(made.context, serve_http, state.address)


def start(
    root: str | Path,
    port: int | None = None,
    faults: Faults | None = None,
    storage: bool = True,
    storage_max_bytes: int = DEFAULT_LIMIT,
    max_replicas: int | None = None,
) -> Emulator:
    """Serve every service in ``SERVICES`` from ``root``, on ``unix:<root>/emulator.sock``
    (mode 0600: the owner only), or on ``127.0.0.1:port`` when ``port`` is given (0: a free
    port; any local user can reach it: an opt-in, logged as a warning).

    Unless ``storage`` is False, also serve ``<root>/gcs`` through the Cloud Storage JSON API
    on ``http://127.0.0.1:PORT/<secret>`` (:mod:`trainpool.emulator.cloud_storage`): owner-only
    through a fresh secret kept in 0600 files of the root; no object over
    ``storage_max_bytes``.

    ``max_replicas`` bounds the replicas running at once (the machine's quota,
    :mod:`trainpool.emulator.jobs.quota`; default ``$TRAINPOOL_EMULATOR_MAX_REPLICAS``, else
    twice the CPUs, at least 8): jobs beyond it wait QUEUED.

    The root is made its owner's only first (:mod:`trainpool.emulator.private_root`: mode
    0700, and this process's umask at least 0o077). Raises
    :class:`trainpool.emulator.root_lock.RootInUse` (an ``OSError``) when another
    emulator serves ``root``; nothing of that one is touched.
    """
    if port is not None and not 0 <= port <= 65535:
        raise ValueError(f"port: {port!r}; accepted: 0 (any free port) to 65535")
    if storage_max_bytes < 1:
        raise ValueError(f"storage_max_bytes: {storage_max_bytes!r}; accepted: 1 or more")
    limit = parse_limit(max_replicas) if max_replicas is not None else default_limit()
    root = Path(root).resolve()
    private_root.make_private(root)
    lock = root_lock.acquire(root)
    state, log, threads = _opened(root, faults or Faults(), lock)
    interceptors = [FaultInterceptor(state.faults)] if state.faults.active else []
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix=threads),
        interceptors=interceptors,
        options=[("grpc.so_reuseport", 0)],
    )
    doors = _Doors()
    try:
        manager = doors.open(state, server, port, storage, storage_max_bytes, limit)
    except BaseException:
        doors.close()
        server.stop(0)
        state.close()
        close_log(log)
        listen.forget(state.address)
        lock.release()
        raise
    server.start()
    lock.publish(state.address, state.storage_address, state.rest_address)
    assert doors.firer is not None  # open made it
    return Emulator(
        state, manager, doors.firer, server, lock, doors.storage, log, doors.rest, doors.proxy
    )


def _opened(
    root: Path, faults: Faults, lock: root_lock.RootLock
) -> tuple[EmulatorState, logging.Handler, str]:
    """The state of ``root`` (whose ``lock`` start holds), its log open for the server's
    threads, and those threads' name prefix; what was opened is closed again, and the
    lock released, when a step fails."""
    try:
        state = EmulatorState(root, faults)
    except BaseException:
        lock.release()
        raise
    threads = f"emulator-{id(state):x}"
    try:
        log = open_log(state.home.emulator_log, threads)
    except BaseException:
        state.close()
        lock.release()
        raise
    return state, log, threads


@dataclass
class _Doors:
    """What :func:`start` opens beside the gRPC server (the storage door, the REST door,
    the HTTPS proxy), each None until it is open."""

    storage: StorageServer | None = None
    rest: RestDoor | None = None
    proxy: ProxyServer | None = None
    firer: Firer | None = None
    """The schedule firer the wiring made (:func:`_handlers`), once the services are."""

    def open(
        self,
        state: EmulatorState,
        server: grpc.Server,
        port: int | None,
        storage: bool,
        storage_max_bytes: int,
        limit: int,
    ) -> JobManager:
        """Open the doors, have ``server`` listen and serve the services (their job
        manager started, answered); each door is kept as soon as it is open."""
        secret = new_secret()
        write_private(state.home.storage_token, secret + "\n")
        if storage:
            self.storage = serve(state.home, limit=storage_max_bytes, secret=secret)
            state.storage = self.storage.key
        rest = self.rest = RestDoor(state, DoorKey("", secret, state.home.storage_token))
        state.rest_address = rest.address
        if port is None:
            state.address = listen.listen_unix(server, listen.socket_path(state.home))
        else:
            state.address = listen.listen_tcp(server, port)
            _log.warning(PORT_WARNING.format(address=state.address))
        manager = start_job_manager(state, limit)
        handlers, self.firer = _handlers(state, manager)
        server.add_generic_rpc_handlers(handlers)
        rest.start()
        self.proxy = _proxy(state, self.storage, rest).start()
        state.proxy_address = self.proxy.address
        return manager

    def close(self) -> None:
        """Close the doors that were opened (a start that failed part-way)."""
        if self.storage is not None:
            self.storage.close()
        if self.rest is not None:
            self.rest.server_close()
        if self.proxy is not None:
            self.proxy.close()
