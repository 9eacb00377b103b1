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
    to every answer; ``kill``: SIGKILL one replica some seconds after it starts;
    ``methods``: limit the first two to these method names (e.g. ``("GetCustomJob",)``)."""

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
        handler = continuation(handler_call_details)
        if handler is None or not self._applies(handler_call_details.method):
            return handler
        with self._lock:
            refuse = self._random.random() < self.faults.unavailable_rate
        if self.faults.delay_s:
            time.sleep(self.faults.delay_s)
        if not refuse:
            return handler

        def unavailable(request: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.UNAVAILABLE, "The service is currently unavailable.")

        return grpc.unary_unary_rpc_method_handler(
            unavailable,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
