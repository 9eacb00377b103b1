"""What the emulator answers for a method it does not serve: UNIMPLEMENTED, naming it.

gRPC's own answer to an unknown method is a bare ``Method not found!``, which names neither
the service nor the emulator: a Vertex user cannot tell an emulator gap from a typo.
:class:`Unserved` is the last handler of the server; it answers every method no service
took with UNIMPLEMENTED (REST: 501) and a message that names the method, its service,
whether the emulator serves other methods of that service, and where the coverage page
is. A method listed in :data:`REFUSED` says why it is not emulated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import grpc

from trainpool.emulator.api.rpc import Service
from trainpool.emulator.api.versions import v1_name

COVERAGE = "docs/emulator-coverage.md"
"""The page that lists every method of every emulated service and what the emulator does."""
REFUSED: dict[str, str] = {}
"""``package.Service/Method`` -> why the emulator does not serve it (beyond not emulated)."""


def message(service: str, method: str, served: Mapping[str, Service]) -> str:
    """The words of an UNIMPLEMENTED answer for ``service``/``method``."""
    short = service.rsplit(".", 1)[-1]
    why = REFUSED.get(f"{service}/{method}")
    if service in served or v1_name(service) in served:
        head = (
            f"{short}.{method} ({service}) is not served by the trainpool emulator, which "
            f"serves other methods of {short}"
        )
    else:
        head = f"{service} is not served by the trainpool emulator, so {method} is not either"
    return (
        f"{head}: {why or 'it is not emulated'}; the emulator's coverage page ({COVERAGE}) "
        "lists what it serves"
    )


class Unserved(grpc.GenericRpcHandler):
    """Answers every method no other handler took: UNIMPLEMENTED, naming it."""

    def __init__(self, served: Mapping[str, Service]) -> None:
        self.served = served

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Any:
        path = handler_call_details.method or ""
        service, _, method = path.strip("/").partition("/")
        text = message(service or "(no service)", method or "(no method)", self.served)

        def refuse(_requests: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, text)

        return grpc.stream_stream_rpc_method_handler(refuse)
