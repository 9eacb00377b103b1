"""Faults for tests: answer UNAVAILABLE on a share of calls, delay answers, kill a replica.

``Faults`` is given to :func:`trainpool.emulator.start` (or set by the
``trainpool emulator`` flags). The UNAVAILABLE choice is seeded, so a test sees
the same sequence of failures every run.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from trainpool.emulator.execution import KillFault


@dataclass(frozen=True)
class Faults:
    """``unavailable_rate``: share of calls (0..1) answered UNAVAILABLE; ``delay_s``: added
    to every answer (each call waits on its own; the request is carried out after the
    delay); ``kill``: SIGKILL one replica some seconds after it starts; ``methods``: limit
    the first two to these method names (e.g. ``("GetCustomJob",)``)."""

    unavailable_rate: float = 0.0
    delay_s: float = 0.0
    seed: int = 0
    kill: KillFault | None = None
    methods: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 0.0 <= self.unavailable_rate <= 1.0:
            raise ValueError(
                f"unavailable_rate: {self.unavailable_rate!r}; accepted: a share from 0.0 to 1.0"
            )
        if self.delay_s < 0:
            raise ValueError(f"delay_s: {self.delay_s!r}; accepted: seconds >= 0")

    @property
    def active(self) -> bool:
        return self.unavailable_rate > 0 or self.delay_s > 0


class FaultInterceptor(grpc.ServerInterceptor):
    """Delays and refuses calls as ``faults`` says, before the real handler sees them."""

    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self._random = random.Random(faults.seed)
        self._lock = threading.Lock()

    def _applies(self, method: str) -> bool:
        return not self.faults.methods or method.rsplit("/", 1)[-1] in self.faults.methods

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        # This runs on the server's one polling thread: sleeping here would hold up every
        # call of every client. The delay is served inside the call, on its worker thread,
        # after the request has arrived, so a client that gives up early may still find
        # its request carried out, as with a slow real server.
        handler = continuation(handler_call_details)
        if handler is None or not self._applies(handler_call_details.method):
            return handler
        if handler.unary_unary is None:
            return handler
        with self._lock:
            refuse = self._random.random() < self.faults.unavailable_rate
        if not refuse and not self.faults.delay_s:
            return handler
        behaviour = handler.unary_unary
        delay_s = self.faults.delay_s

        def faulty(request: Any, context: grpc.ServicerContext) -> Any:
            if delay_s:
                time.sleep(delay_s)
            if refuse:
                context.abort(grpc.StatusCode.UNAVAILABLE, "The service is currently unavailable.")
            return behaviour(request, context)

        return grpc.unary_unary_rpc_method_handler(
            faulty,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
