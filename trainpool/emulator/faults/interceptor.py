"""Applies :class:`trainpool.emulator.faults.config.Faults` to gRPC calls: delays, UNAVAILABLE."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

import grpc

from trainpool.emulator.faults.config import Faults


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
