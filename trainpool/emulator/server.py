"""The emulator's gRPC server, one per root: it wires the records, the job engine and the
services, and serves them where :mod:`trainpool.emulator.listen` says.

``SERVICES`` lists the modules that serve an API; each exposes
``handler(state: EmulatorState, runner: Runner) -> grpc.GenericRpcHandler``. The server
holds the root's lock (:mod:`trainpool.emulator.root_lock`) from before recovery until it
stops.
"""

from __future__ import annotations

from concurrent import futures
from pathlib import Path
from types import ModuleType, TracebackType

import grpc
from google.cloud.aiplatform_v1.types import custom_job as cj

from trainpool.emulator import listen, root_lock
from trainpool.emulator.api import (
    cloud_build,
    faults_service,
    job_service,
    local_service,
    model_service,
    pipeline_service,
    resource_manager,
    schedule_service,
)
from trainpool.emulator.cloud_storage.server import StorageServer, serve
from trainpool.emulator.faults.config import Faults
from trainpool.emulator.faults.interceptor import FaultInterceptor
from trainpool.emulator.jobs.quota import default_limit, parse_limit
from trainpool.emulator.jobs.runner import Runner, start_runner
from trainpool.emulator.state import EmulatorState

SERVICES: tuple[ModuleType, ...] = (
    job_service,
    pipeline_service,
    model_service,
    schedule_service,
    cloud_build,
    resource_manager,
    faults_service,
    local_service,
)
WORKERS = 32


class Emulator:
    """A running emulator: ``address`` is ``unix:<root>/emulator.sock`` (or
    ``127.0.0.1:PORT`` when started with a port); ``storage_address`` is
    ``http://127.0.0.1:PORT`` when it serves the Cloud Storage JSON API (else None);
    ``stop()`` ends it."""

    def __init__(
        self,
        state: EmulatorState,
        runner: Runner,
        server: grpc.Server,
        lock: root_lock.RootLock,
        storage: StorageServer | None = None,
    ) -> None:
        self.state = state
        self.runner = runner
        self.root = state.root
        self.address = state.address
        self.port = int(self.address.rsplit(":", 1)[1]) if self.address[0].isdigit() else None
        self.storage_address = storage.address if storage is not None else None
        self._server = server
        self._storage = storage
        self._lock = lock
        self._stopped = False

    def stop(self, grace_s: float = 1.0) -> None:
        """Stop serving, stop every running job (marked FAILED), close the database,
        remove the socket, release the root."""
        if self._stopped:
            return
        self._stopped = True
        if self._storage is not None:
            self._storage.stop()
        self._server.stop(grace_s).wait()
        try:
            self.state.close()
        finally:
            listen.forget(self.address)
            self._lock.release()

    def preempt(self, job_name: str) -> cj.CustomJob:
        """Preempt RUNNING CustomJob ``job_name`` as Compute Engine reclaims Spot VMs, and
        return it ended (FAILED, STOCKOUT); see
        :func:`trainpool.emulator.api.faults_service.preempt` (it raises
        ``trainpool.emulator.api.rpc.RpcError``)."""
        return faults_service.preempt(self.runner, job_name)

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
        self.stop()


def start(
    root: str | Path,
    port: int | None = None,
    faults: Faults | None = None,
    storage: bool = False,
    max_replicas: int | None = None,
) -> Emulator:
    """Serve every service in ``SERVICES`` from ``root``, on ``unix:<root>/emulator.sock``
    (mode 0600), or on ``127.0.0.1:port`` when ``port`` is given (0: a free port).

    With ``storage``, also serve ``<root>/gcs`` through the Cloud Storage JSON API on
    ``http://127.0.0.1:PORT`` (a free port; :mod:`trainpool.emulator.cloud_storage`), for
    clients given ``STORAGE_EMULATOR_HOST``: a port, so every local user can reach it.

    ``max_replicas`` bounds the replicas running at once (the machine's quota,
    :mod:`trainpool.emulator.jobs.quota`; default ``$TRAINPOOL_EMULATOR_MAX_REPLICAS``, else
    twice the CPUs, at least 8): jobs beyond it wait QUEUED.

    Raises :class:`trainpool.emulator.root_lock.RootInUse` (an ``OSError``) when another
    emulator serves ``root``; nothing of that one is touched.
    """
    if port is not None and not 0 <= port <= 65535:
        raise ValueError(f"port: {port!r}; accepted: 0 (any free port) to 65535")
    limit = parse_limit(max_replicas) if max_replicas is not None else default_limit()
    root = Path(root).resolve()
    lock = root_lock.acquire(root)
    try:
        state = EmulatorState(root, faults or Faults())
    except BaseException:
        lock.release()
        raise
    interceptors = [FaultInterceptor(state.faults)] if state.faults.active else []
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=WORKERS),
        interceptors=interceptors,
        options=[("grpc.so_reuseport", 0)],
    )
    door: StorageServer | None = None
    try:
        if storage:
            door = serve(state.home)
            state.storage_address = door.address
        if port is None:
            state.address = listen.listen_unix(server, listen.socket_path(state.home))
        else:
            state.address = listen.listen_tcp(server, port)
        runner = start_runner(state, limit)
        server.add_generic_rpc_handlers([module.handler(state, runner) for module in SERVICES])
    except BaseException:
        if door is not None:
            door.stop()
        server.stop(0)
        state.close()
        listen.forget(state.address)
        lock.release()
        raise
    server.start()
    lock.publish(state.address, door.address if door is not None else None)
    return Emulator(state, runner, server, lock, door)
