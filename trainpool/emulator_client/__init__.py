"""The client of the emulator's own services, beside Vertex's API (``trainpool.emulator.v1``).

- ``Local.Describe``: where an emulator's store is and which doors it serves
  (:func:`served_by`), so a client given only its address (``VERTEX_AI_EMULATOR_HOST``)
  works in the emulator's store, never a guess from its own ``TRAINPOOL_HOME``
  (:func:`current`);
- ``Clock``: :func:`get_time`, :func:`advance_clock` (schedules fire on the way);
- ``Faults``: :func:`preempt_job`.

The messages are in :mod:`.messages`; the server is :mod:`trainpool.emulator.api`
(``local_service``, ``clock_service``, ``faults_service``). Imports ``grpc`` and the
messages only when a call is made.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from trainpool.config import emulator_host
from trainpool.home import Home

if TYPE_CHECKING:
    from google.cloud.aiplatform_v1.types import custom_job as cj

    from trainpool.emulator_client.messages import AdvanceClockResponse, ClockTime

DEFAULT_WAIT_S = 600.0
"""How long :func:`advance_clock` with ``wait_for_runs`` waits in all, by default."""

DESCRIBE_METHOD = "/trainpool.emulator.v1.Local/Describe"
"""The emulator's own RPC that names its root and its Cloud Storage door (JSON answer)."""


@dataclass(frozen=True)
class Served:
    """What an emulator says of itself: its store and its Cloud Storage door ("" if none)."""

    home: Home
    storage_env: dict[str, str]
    """What points Cloud Storage clients at its door (``STORAGE_EMULATOR_HOST``, gcloud's
    endpoint and token file); empty when it serves none."""

    rest_address: str = ""
    """``http://127.0.0.1:PORT``: its REST door (the doors' secret is the store's
    ``storage.token``)."""
    proxy_address: str = ""
    """``http://127.0.0.1:PORT``: its HTTPS proxy (Google's URLs answered locally)."""

    @property
    def storage_address(self) -> str:
        return self.storage_env.get("STORAGE_EMULATOR_HOST", "")


def served_by(address: str, timeout_s: float = 10.0) -> Served:
    """Ask the emulator at ``address`` (``unix:PATH`` or ``127.0.0.1:PORT``) where its store
    is: one truth for every client, whatever ``TRAINPOOL_HOME`` says. OSError naming the
    address when it does not answer."""
    import json

    import grpc

    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(DESCRIBE_METHOD)
        try:
            raw = call(b"", timeout=timeout_s)
        except grpc.RpcError as err:
            raise OSError(
                f"the emulator at {address} did not say where its store is: {err.code().name} "
                f"{err.details()}; accepted: an emulator this trainpool started"
            ) from err
    answer = json.loads(raw)
    storage = answer.get("storage_env") or {}
    return Served(
        Home(Path(answer["root"])),
        {str(k): str(v) for k, v in storage.items()},
        str(answer.get("rest_address") or ""),
        str(answer.get("proxy_address") or ""),
    )


def current(root: Path | str | None = None) -> Home:
    """The store a command works in: ``root`` when given, else the store of the emulator
    ``VERTEX_AI_EMULATOR_HOST`` names (asked, :func:`served_by`), else ``$TRAINPOOL_HOME``."""
    if root is not None:
        return Home(Path(root))
    named = emulator_host()
    return served_by(named).home if named is not None else Home.default()


def get_time(address: str, timeout_s: float = 30.0) -> ClockTime:
    """The time of the emulator at ``address`` (``unix:/PATH`` or ``127.0.0.1:PORT``)."""
    import grpc

    from trainpool.emulator_client.messages import CLOCK, ClockTime, GetTimeRequest

    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(
            f"/{CLOCK}/GetTime",
            request_serializer=GetTimeRequest.serialize,
            response_deserializer=ClockTime.deserialize,
        )
        found: ClockTime = call(GetTimeRequest(), timeout=timeout_s)
        return found


def advance_clock(
    address: str,
    *,
    by: timedelta | None = None,
    to: datetime | None = None,
    wait_for_runs: bool = False,
    wait_timeout_s: float = DEFAULT_WAIT_S,
) -> AdvanceClockResponse:
    """Advance the clock of the emulator at ``address`` ``by`` a duration or ``to`` a time
    (see the module's docstring). Errors are ``grpc.RpcError`` with the server's status."""
    if (by is None) == (to is None):
        raise ValueError("advance_clock: give one of by (a timedelta) and to (a datetime)")
    import grpc

    from trainpool.emulator_client.messages import (
        CLOCK,
        AdvanceClockRequest,
        AdvanceClockResponse,
    )

    request = AdvanceClockRequest(wait_for_runs=wait_for_runs)
    if by is not None:
        request.by = by
    if to is not None:
        request.to = to
    if wait_for_runs:
        request.wait_timeout = timedelta(seconds=wait_timeout_s)
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(
            f"/{CLOCK}/AdvanceClock",
            request_serializer=AdvanceClockRequest.serialize,
            response_deserializer=AdvanceClockResponse.deserialize,
        )
        done: AdvanceClockResponse = call(request, timeout=wait_timeout_s + 60.0)
        return done


def preempt_job(address: str, name: str, timeout_s: float = 60.0) -> cj.CustomJob:
    """Preempt CustomJob ``name`` on the emulator at ``address`` (``unix:/PATH`` or
    ``127.0.0.1:PORT``); the ended job. Errors are ``grpc.RpcError`` with the server's
    status code and message."""
    import grpc
    from google.cloud.aiplatform_v1.types import custom_job as cj

    from trainpool.emulator_client.messages import FAULTS, PreemptJobRequest

    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(
            f"/{FAULTS}/PreemptJob",
            request_serializer=PreemptJobRequest.serialize,
            response_deserializer=cj.CustomJob.deserialize,
        )
        job: cj.CustomJob = call(PreemptJobRequest(name=name), timeout=timeout_s)
        return job
