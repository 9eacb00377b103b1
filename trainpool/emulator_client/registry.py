"""The client of the emulator's ``Local.Push`` (a ``docker push`` recorded in its Artifact
Registry), ``Local.Pull`` (what a push recorded), ``Local.Bases`` (a ``docker build``'s
bases made available to its engine) and ``Local.Engine`` (its container engine, which the
``build_image`` component's local path builds on: :func:`engine_call`).

``docker push`` under ``trainpool exec`` (:mod:`trainpool.redirect.docker`) calls
:func:`record_push`; the server is :mod:`trainpool.emulator.jobs.local_service`, which
records the image in the emulator's Artifact Registry. Kept out of the package's
``__init__`` so the components image, which imports that, does not carry it.
"""

from __future__ import annotations

import json

PUSH_METHOD = "/trainpool.emulator.v1.Local/Push"
"""The emulator's own RPC that records a ``docker push`` to its Artifact Registry (JSON)."""
ENGINE_METHOD = "/trainpool.emulator.v1.Local/Engine"
"""The emulator's own RPC that describes, asks and builds on its container engine (JSON)."""
PULL_METHOD = "/trainpool.emulator.v1.Local/Pull"
"""The emulator's own RPC that answers which engine image a ``docker push`` recorded (JSON)."""
BASES_METHOD = "/trainpool.emulator.v1.Local/Bases"
"""The emulator's own RPC that gives its engine a Dockerfile's bases (JSON)."""


def record_push(
    address: str,
    image: str,
    image_id: str,
    size: int = 0,
    created: str = "",
    timeout_s: float = 30.0,
) -> dict[str, object]:
    """Record on the emulator at ``address`` that the engine's image ``image_id`` was pushed
    as ``image``; the DockerImage Artifact Registry now answers (JSON fields). Errors are
    ``grpc.RpcError``: FAILED_PRECONDITION with Artifact Registry's words for a refused push."""
    import grpc

    asked = {"image": image, "id": image_id, "size": size, "created": created}
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(PUSH_METHOD)
        answer: bytes = call(json.dumps(asked).encode(), timeout=timeout_s)
    found: dict[str, object] = json.loads(answer)
    return found


def pushed_image(address: str, image: str, timeout_s: float = 30.0) -> str | None:
    """The engine image id that a ``docker push`` recorded as ``image`` in the Artifact
    Registry of the emulator at ``address``; None when it was never pushed there."""
    import grpc

    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(PULL_METHOD)
        try:
            answer: bytes = call(json.dumps({"image": image}).encode(), timeout=timeout_s)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.NOT_FOUND:
                return None
            raise
    return str(json.loads(answer)["id"])


def ensure_bases(
    address: str, dockerfile: str, build_args: dict[str, str], timeout_s: float = 600.0
) -> str:
    """Ask the emulator at ``address`` to make ``dockerfile``'s bases available to its
    container engine (an offline stand-in made the first time takes about a minute); what the
    build's output should say of them ("" when nothing)."""
    import grpc

    asked = {"dockerfile": dockerfile, "build_args": build_args}
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(BASES_METHOD)
        answer: bytes = call(json.dumps(asked).encode(), timeout=timeout_s)
    return str(json.loads(answer).get("said", ""))


def engine_call(address: str, op: str, timeout_s: float = 30.0, **fields: object) -> dict[str, str]:
    """``Local.Engine`` of the emulator at ``address``: ``op`` (describe, has, tag, build) with
    ``fields``; its answer. Errors are ``grpc.RpcError`` (FAILED_PRECONDITION: no engine, or
    a base it cannot have; ABORTED: a failed build step)."""
    import grpc

    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(ENGINE_METHOD)
        answer: bytes = call(json.dumps({"op": op, **fields}).encode(), timeout=timeout_s)
    found: dict[str, str] = json.loads(answer)
    return found
