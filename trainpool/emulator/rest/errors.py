"""gRPC status codes as HTTP statuses, and Google's JSON error body.

The mapping is ``google/rpc/code.proto``'s (each code's "HTTP Mapping"); the body is what
Google's APIs answer: ``{"error": {"code": 400, "message": "...", "status":
"INVALID_ARGUMENT", "details": [...]}}`` (AIP-193).
"""

from __future__ import annotations

import json
from typing import Any

import grpc

HTTP_STATUS = {
    grpc.StatusCode.OK: 200,
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500,
}
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
DOMAIN = "trainpool.emulator"


def body(
    code: grpc.StatusCode,
    message: str,
    reason: str = "",
    http: int = 0,
    metadata: dict[str, str] | None = None,
) -> bytes:
    """Google's JSON error body for ``code`` and ``message`` (``http``: an HTTP status other
    than the code's, as 413 for a body too large); ``reason`` adds an ErrorInfo."""
    error: dict[str, Any] = {
        "code": http or HTTP_STATUS[code],
        "message": message,
        "status": code.name,
    }
    if reason:
        error["details"] = [
            {"@type": ERROR_INFO, "reason": reason, "domain": DOMAIN, "metadata": metadata or {}}
        ]
    return json.dumps({"error": error}, indent=2).encode("utf-8")
