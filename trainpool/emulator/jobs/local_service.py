"""``trainpool.emulator.v1.Local``: what the emulator says of itself to its own clients.

``Describe() -> {"root", "storage_env", "rest_address"}`` (JSON): the store this emulator
serves, what points Cloud Storage clients at its door (``EmulatorState.storage_env``) and
where its REST door listens (``EmulatorState.rest_address``), so a client that
is given only the emulator's address (``VERTEX_AI_EMULATOR_HOST``) finds the store from
the emulator itself, never from its own ``TRAINPOOL_HOME``
(:func:`trainpool.emulator_client.served_by` is the client).

``Push({"image", "id", "size", "created"}) -> DockerImage`` (JSON both ways): record that
the container engine's image ``id`` was pushed as ``image`` to Artifact Registry
(:func:`trainpool.emulator.artifact_registry.repositories.record_push`); what ``docker push`` under
``trainpool exec`` calls (:mod:`trainpool.redirect.docker`, client
:func:`trainpool.emulator_client.registry.record_push`). A push Artifact Registry refuses answers
FAILED_PRECONDITION with its words.

``Pull({"image"}) -> {"id"}`` (JSON): the engine image id a ``docker push`` recorded for
``image`` (by tag, no tag ``latest``, or by digest) in the emulator's Artifact Registry
(:func:`trainpool.emulator.artifact_registry.repositories.pushed`); NOT_FOUND, in the
registry's words, when it was never pushed: what ``docker pull`` under ``trainpool exec``
asks, so a pull answers what a pull from Artifact Registry answers, never just what the
engine happens to have (client :func:`trainpool.emulator_client.registry.pushed_image`).

``Bases({"dockerfile", "build_args"}) -> {"said"}`` (JSON): make the bases a Dockerfile
starts ``FROM`` available to the container engine before a ``docker build`` under
``trainpool exec`` (:func:`trainpool.emulator.builds.engine_builds.ensure_base`: the engine
has it, pulls it, or the offline stand-in is tagged with its name), so ``FROM
python:3.11-slim`` builds here as on a user's machine; ``said`` is what the build's output
should say (a stand-in, and how it differs; a base that cannot be had; no engine).

``Engine({"op", ...}) -> {...}`` (JSON): the emulator's container engine, for the
``build_image`` component's local path (:class:`trainpool.images.image_store_backend.
EngineBackend`), so the image it builds is one the engine runs: ``describe`` ->
``{"engine"}`` ("" with none, and ``why``); ``has`` ``{"image"}`` -> ``{"id"}`` ("" when the
engine lacks it); ``tag`` ``{"image", "name"}``; ``build`` ``{"context", "image",
"build_args", "dockerfile"}`` (``context``: the path of a gzipped build context on this
machine) -> ``{"id", "log"}``, built as Cloud Build builds on the engine
(:func:`trainpool.emulator.builds.engine_builds.build`: every step run, bases pulled or
stood in) and tagged ``image``; a base that cannot be had answers FAILED_PRECONDITION, a
failed step ABORTED, a step that found the engine's disk full RESOURCE_EXHAUSTED naming it,
each with the build's words. Not Vertex APIs.
"""

from __future__ import annotations

import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import grpc
from google.cloud.artifactregistry_v1.types import artifact

from trainpool.emulator.artifact_registry.repositories import PushRefused, pushed, record_push
from trainpool.emulator.builds.engine_builds import (
    BaseUnavailable,
    BuildDiskFull,
    BuildFailed,
    build,
    ensure_base,
)
from trainpool.emulator.jobs.containers import ContainerEngine
from trainpool.emulator.jobs.manager import JobManager
from trainpool.emulator.state import EmulatorState
from trainpool.emulator_client import DESCRIBE_METHOD
from trainpool.emulator_client.registry import (
    BASES_METHOD,
    ENGINE_METHOD,
    PULL_METHOD,
    PUSH_METHOD,
)
from trainpool.images import image_config

SERVICE, METHOD = DESCRIBE_METHOD.strip("/").split("/")
PUSH = PUSH_METHOD.rsplit("/", 1)[1]
PULL = PULL_METHOD.rsplit("/", 1)[1]
BASES = BASES_METHOD.rsplit("/", 1)[1]
ENGINE = ENGINE_METHOD.rsplit("/", 1)[1]


class LocalService:
    """The methods of ``trainpool.emulator.v1.Local``, each ``(request bytes, context) ->
    response bytes``, over the emulator's state and its container engine."""

    def __init__(self, state: EmulatorState, manager: JobManager) -> None:
        self.state = state
        self.manager = manager

    def describe(self, request: bytes, context: Any) -> bytes:
        state = self.state
        answer = {
            "root": str(state.root),
            "storage_env": state.storage_env(),
            "rest_address": state.rest_address,
            "proxy_address": state.proxy_address,
        }
        return json.dumps(answer).encode()

    def push(self, request: bytes, context: Any) -> bytes:
        try:
            asked = json.loads(request)
            image, image_id = str(asked["image"]), str(asked["id"])
            created = str(asked.get("created") or "")
            built = datetime.fromisoformat(created[:26].rstrip("Z")) if created else None
            size = int(asked.get("size") or 0)
        except (ValueError, KeyError, TypeError) as err:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"Push: {err}; accepted: JSON with image, id, size and created",
            )
        try:
            record = record_push(self.state, image, image_id, size, built)
        except PushRefused as err:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(err))
        return artifact.DockerImage.to_json(record).encode()

    def pull(self, request: bytes, context: Any) -> bytes:
        try:
            image = str(json.loads(request)["image"])
        except (ValueError, KeyError, TypeError) as err:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"Pull: {err}; accepted: JSON with image"
            )
        record = pushed(self.state, image)
        if record is None:
            context.abort(
                grpc.StatusCode.NOT_FOUND,
                f"manifest for {image} not found: manifest unknown: the emulator's Artifact "
                "Registry has no such image (push it first: docker push, under trainpool exec)",
            )
            return b""  # not reached: abort raises
        return json.dumps({"id": record.name.rsplit("@", 1)[1]}).encode()

    def bases(self, request: bytes, context: Any) -> bytes:
        try:
            asked = json.loads(request)
            names = image_config.base_images(
                str(asked["dockerfile"]), dict(asked.get("build_args") or {})
            )
        except (ValueError, KeyError, TypeError) as err:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"Bases: {err}; accepted: JSON with dockerfile and build_args",
            )
        said = io.StringIO()
        manager = self.manager
        if manager.containers is None:
            said.write(f"the emulator has no container engine ({manager.no_containers})\n")
        else:
            for name in names:
                try:
                    ensure_base(manager.containers, name, said)
                except BaseUnavailable as err:
                    said.write(f"{err}\n")
        return json.dumps({"said": said.getvalue()}).encode()

    def engine(self, request: bytes, context: Any) -> bytes:
        try:
            asked = json.loads(request)
            op = str(asked["op"])
        except (ValueError, KeyError, TypeError) as err:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"Engine: {err}; accepted: JSON with op (describe, has, tag, build)",
            )
        found, why = self.manager.containers, self.manager.no_containers
        if op == "describe":
            return json.dumps({"engine": found.describe if found else "", "why": why}).encode()
        if found is None:
            context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"the emulator has no container engine ({why})",
            )
            return b""  # not reached: abort raises
        try:
            answer = engine_op(found, op, asked)
        except KeyError as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"Engine {op}: {err} is missing")
        except BaseUnavailable as err:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(err))
        except BuildDiskFull as err:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(err))
        except BuildFailed as err:
            context.abort(grpc.StatusCode.ABORTED, str(err))
        if answer is not None:
            return answer
        context.abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"Engine: op {op!r}; accepted: describe, has, tag, build",
        )
        return b""  # not reached: abort raises


def engine_op(found: ContainerEngine, op: str, asked: dict[str, Any]) -> bytes | None:
    """The answer of Engine's ``has``, ``tag`` or ``build`` on the engine ``found``; None
    for any other ``op``. A missing field raises ``KeyError``; a build, the build's errors."""
    if op == "has":
        image = found.image(str(asked["image"]))
        return json.dumps({"id": image.id if image else ""}).encode()
    if op == "tag":
        repository, _, tag = str(asked["name"]).rpartition(":")
        found.client.images.get(str(asked["image"])).tag(repository, tag)
        return b"{}"
    if op == "build":
        log = io.StringIO()
        data = Path(str(asked["context"])).read_bytes()
        image_id = build(
            found,
            data,
            dict(asked.get("build_args") or {}),
            log,
            str(asked.get("dockerfile") or "Dockerfile"),
        )
        repository, _, tag = str(asked["image"]).rpartition(":")
        found.client.images.get(image_id).tag(repository, tag)
        return json.dumps({"id": image_id, "log": log.getvalue()}).encode()
    return None


def handler(state: EmulatorState, manager: JobManager) -> grpc.GenericRpcHandler:
    """The ``trainpool.emulator.v1.Local`` handler: Describe, Push, Pull, Bases, Engine."""
    local = LocalService(state, manager)
    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            METHOD: grpc.unary_unary_rpc_method_handler(local.describe),
            PUSH: grpc.unary_unary_rpc_method_handler(local.push),
            PULL: grpc.unary_unary_rpc_method_handler(local.pull),
            BASES: grpc.unary_unary_rpc_method_handler(local.bases),
            ENGINE: grpc.unary_unary_rpc_method_handler(local.engine),
        },
    )
