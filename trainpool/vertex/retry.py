"""Calls to Vertex with bounded exponential backoff on transient errors only.

UNAVAILABLE, DEADLINE_EXCEEDED and RESOURCE_EXHAUSTED are retried; any other
error fails at once with the server's own message.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from google.api_core import exceptions

T = TypeVar("T")

RETRYABLE: tuple[type[exceptions.GoogleAPICallError], ...] = (
    exceptions.ServiceUnavailable,
    exceptions.DeadlineExceeded,
    exceptions.ResourceExhausted,
)


class VertexError(RuntimeError):
    """A Vertex call that failed for good; the message carries the server's."""


@dataclass(frozen=True)
class Backoff:
    """Delays ``initial * multiplier**n`` capped at ``maximum``, for at most ``attempts`` calls."""

    initial: float = 1.0
    maximum: float = 30.0
    multiplier: float = 2.0
    attempts: int = 8

    def delays(self) -> list[float]:
        """The sleeps between attempts (one fewer than ``attempts``)."""
        return [
            min(self.maximum, self.initial * self.multiplier**n) for n in range(self.attempts - 1)
        ]


def status(err: exceptions.GoogleAPICallError) -> str:
    """The gRPC status name of ``err`` (``UNAVAILABLE``), else its HTTP one."""
    if err.grpc_status_code is not None:
        return str(err.grpc_status_code.name)
    return str(getattr(err.code, "name", err.code))


def call(
    what: str,
    fn: Callable[[], T],
    backoff: Backoff,
    log: Callable[[str], None] = print,
    before_retry: Callable[[], T | None] | None = None,
) -> T:
    """Run ``fn``; retry transient errors per ``backoff``.

    ``before_retry`` runs before each new attempt; when it returns a value, that
    value is the result (used to find a job an earlier attempt did create).
    """
    delays = backoff.delays()
    attempt = 0
    while True:
        try:
            return fn()
        except RETRYABLE as err:
            if attempt == len(delays):
                tries = backoff.attempts
                raise VertexError(
                    f"{what}: still {status(err)} after {tries} attempts: {err.message}"
                ) from err
            log(f"{what}: {status(err)} ({err.message}); retrying in {delays[attempt]:g}s")
            time.sleep(delays[attempt])
            attempt += 1
            if before_retry is not None:
                found = call(f"{what} (lookup before retry)", before_retry, backoff, log)
                if found is not None:
                    return found
        except exceptions.GoogleAPICallError as err:
            raise VertexError(f"{what}: {status(err)}: {err.message}") from err
