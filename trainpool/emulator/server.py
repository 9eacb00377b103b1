"""The emulator's gRPC server on loopback, and the registry of its services.

``SERVICES`` lists the modules that serve an API; each exposes
``handler(state: EmulatorState) -> grpc.GenericRpcHandler``.
"""

from __future__ import annotations

import importlib
from concurrent import futures
from pathlib import Path
from types import TracebackType

import grpc

from trainpool.emulator.faults import FaultInterceptor, Faults
from trainpool.emulator.state import EmulatorState

SERVICES: tuple[str, ...] = (
    "trainpool.emulator.job_service",
    "trainpool.emulator.pipeline_service",
    "trainpool.emulator.training_pipeline_service",
    "trainpool.emulator.model_service",
    "trainpool.emulator.schedule_service",
    "trainpool.emulator.cloud_build_service",
)
HOST = "127.0.0.1"
WORKERS = 32


class Emulator:
    """A running emulator: ``address`` is ``127.0.0.1:PORT``; ``stop()`` ends it."""

    def __init__(self, state: EmulatorState, server: grpc.Server, port: int) -> None:
        self.state = state
        self.root = state.root
        self.port = port
        self.address = f"{HOST}:{port}"
        self._server = server
        self._stopped = False

    def stop(self, grace_s: float = 1.0) -> None:
        """Stop serving, stop every running job (marked FAILED), close the database."""
        if self._stopped:
            return
        self._stopped = True
        self._server.stop(grace_s).wait()
        self.state.close()

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


def _listen(server: grpc.Server, port: int) -> int:
    try:
        bound = server.add_insecure_port(f"{HOST}:{port}")
    except RuntimeError:
        bound = 0
    if bound == 0:
        raise OSError(
            f"port: {port}: cannot listen on {HOST}:{port} (in use?); "
            "accepted: a free port, or 0 for any free port"
        )
    return bound


def start(root: str | Path, port: int = 0, faults: Faults | None = None) -> Emulator:
    """Serve every service in ``SERVICES`` on ``127.0.0.1:port`` (0: a free port) from ``root``."""
    if not 0 <= port <= 65535:
        raise ValueError(f"port: {port!r}; accepted: 0 (any free port) to 65535")
    state = EmulatorState(Path(root), faults or Faults())
    interceptors = [FaultInterceptor(state.faults)] if state.faults.active else []
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=WORKERS),
        interceptors=interceptors,
        options=[("grpc.so_reuseport", 0)],
    )
    try:
        handlers = [importlib.import_module(name).handler(state) for name in SERVICES]
        server.add_generic_rpc_handlers(handlers)
        bound = _listen(server, port)
    except BaseException:
        state.close()
        raise
    state.address = f"{HOST}:{bound}"
    server.start()
    return Emulator(state, server, bound)
