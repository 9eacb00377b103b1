"""Retry: transient codes retried with bounded backoff, others fail at once with the message."""

from __future__ import annotations

import pytest
from google.api_core import exceptions

from trainpool.vertex.retry import Backoff, VertexError, call

NO_WAIT = Backoff(initial=0.0, maximum=0.0, attempts=4)


def flaky(errors: list[Exception]) -> object:
    def fn() -> str:
        if errors:
            raise errors.pop(0)
        return "done"

    return fn


def test_delays_grow_exponentially_up_to_the_bound() -> None:
    assert Backoff(initial=1, maximum=5, multiplier=2, attempts=6).delays() == [1, 2, 4, 5, 5]


def test_transient_errors_are_retried_and_logged() -> None:
    log: list[str] = []
    errors = [
        exceptions.ServiceUnavailable("down"),
        exceptions.DeadlineExceeded("slow"),
        exceptions.ResourceExhausted("quota"),
    ]
    assert call("Get", flaky(errors), NO_WAIT, log.append) == "done"
    assert log == [
        "Get: UNAVAILABLE (down); retrying in 0s",
        "Get: DEADLINE_EXCEEDED (slow); retrying in 0s",
        "Get: RESOURCE_EXHAUSTED (quota); retrying in 0s",
    ]


def test_retries_stop_at_the_bound() -> None:
    errors: list[Exception] = [exceptions.ServiceUnavailable("down") for _ in range(4)]
    with pytest.raises(VertexError, match="^Get: still UNAVAILABLE after 4 attempts: down$"):
        call("Get", flaky(errors), NO_WAIT, lambda _: None)


def test_other_errors_fail_at_once_with_the_servers_message() -> None:
    log: list[str] = []
    errors: list[Exception] = [exceptions.PermissionDenied("no access to project demo")]
    with pytest.raises(VertexError, match="^Create: PERMISSION_DENIED: no access to project demo$"):
        call("Create", flaky(errors), NO_WAIT, log.append)
    assert log == []


def test_a_lookup_before_retry_returns_what_an_earlier_attempt_made() -> None:
    errors: list[Exception] = [
        exceptions.ServiceUnavailable("lost reply"),
        exceptions.ServiceUnavailable("x"),
    ]
    assert call("Create", flaky(errors), NO_WAIT, lambda _: None, lambda: "found") == "found"
