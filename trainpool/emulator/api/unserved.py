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
_EVALUATIONS = (
    "model evaluations are not kept: the emulator runs no evaluation job; accepted: a "
    "version's metrics kept elsewhere (Vertex ML Metadata is served, or its labels)"
)
_MODEL_SERVICE: dict[str, str] = {
    "BatchImportEvaluatedAnnotations": _EVALUATIONS,
    "BatchImportModelEvaluationSlices": _EVALUATIONS,
    "GetModelEvaluation": _EVALUATIONS,
    "GetModelEvaluationSlice": _EVALUATIONS,
    "ImportModelEvaluation": _EVALUATIONS,
    "ListModelEvaluationSlices": _EVALUATIONS,
    "ListModelEvaluations": _EVALUATIONS,
    "CopyModel": (
        "a Model is not copied between regions or projects (one local store); accepted: "
        "UploadModel with parent_model or a new model_id"
    ),
    "ExportModel": (
        "nothing is exported: a Model's files already lie under its artifactUri in the local store"
    ),
    "ListModelVersionCheckpoints": "a version's checkpoints are not kept",
    "UpdateExplanationDataset": "Vertex Explainable AI is not emulated",
    "RecommendSpec": "nothing is deployed or served, so no machine spec is recommended",
}
REFUSED: dict[str, str] = {
    f"google.cloud.aiplatform.{version}.ModelService/{method}": why
    for version in ("v1", "v1beta1")
    for method, why in _MODEL_SERVICE.items()
}
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
