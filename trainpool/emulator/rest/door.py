"""The REST door: Google's HTTP/JSON APIs for every service the emulator serves.

gcloud, curl, the generated clients' REST transports and the SDK's ``api_transport="rest"``
speak HTTP/JSON. This door answers them on ``http://127.0.0.1:PORT``, the Google API's host
as the first path segment::

    http://127.0.0.1:PORT/us-central1-aiplatform.googleapis.com/v1/projects/P/locations/L/customJobs
    http://127.0.0.1:PORT/logging.googleapis.com/v2/entries:list

(put the door's address before a Google URL's host). A request is matched to its method by
the method's own HTTP rules (:mod:`.routes`), made into the proto request
(:mod:`.transcode`), and handed to the same :class:`trainpool.emulator.api.rpc.Service` the
gRPC door calls, with the same checks; errors come back in Google's JSON shape with the
HTTP status of their gRPC code (:mod:`.errors`). v1beta1 paths reach the v1beta1 twins
(:mod:`trainpool.emulator.api.versions`). A method of a served API that the emulator does
not serve answers 501 naming it; a Google API the emulator does not serve at all answers
403 ``SERVICE_DISABLED`` naming it (what Google answers for an API not enabled), at once:
gcloud and the Python clients retry a 5xx for up to a minute, but not a 403.

Owner-only, as the Cloud Storage door: the request proves the root's secret
(:class:`trainpool.emulator.cloud_storage.access.DoorKey`: ``Authorization: Bearer``, what
gcloud sends from ``CLOUDSDK_AUTH_ACCESS_TOKEN_FILE``, or the secret as the first path
segment); anything else is 403 before the body is read. Bodies are bounded
(:data:`MAX_BODY`); malformed requests answer 400 naming the field, never a 500 with
internals.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import grpc

from trainpool.emulator.api.rpc import (
    RpcError,
    Service,
    new_message,
    raw_message,
    wrap_message,
)
from trainpool.emulator.api.unserved import message as unserved_message
from trainpool.emulator.cloud_storage.access import TOKEN_PATHS, DoorKey, token_grant
from trainpool.emulator.cloud_storage.bodies import Body
from trainpool.emulator.cloud_storage.objects import ApiError
from trainpool.emulator.loopback import Loopback, QuietHandler
from trainpool.emulator.rest import errors, transcode
from trainpool.emulator.rest.apis import SERVED_APIS, api_of
from trainpool.emulator.rest.routes import Routers
from trainpool.errors import InputError

_log = logging.getLogger(__name__)
MAX_TOKEN_BODY = 64 * 1024
TOKEN_APIS = ("oauth2", "www")
"""Hosts of Google's token endpoint (``oauth2.googleapis.com/token``,
``www.googleapis.com/oauth2/v4/token``)."""
WRITE_BUFFER = 1 << 16
"""Bytes of an answer gathered before a write (larger bodies go out as they are)."""
MAX_BODY = 10 << 20
"""The largest request body read (Google's front end takes 10 MiB+ for most APIs; the
emulator's own bound)."""
UNAUTHORISED = (
    "this REST door serves its owner only; accepted: Authorization: Bearer <secret> (the "
    "token gcloud sends under `trainpool exec`, `gcloud auth print-access-token`, the root's "
    "storage.token) or the secret as the path's first segment"
)


class Answer:
    """An HTTP answer: status, JSON body."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status, self.body = status, body

    @classmethod
    def error(cls, code: grpc.StatusCode, text: str, reason: str = "", **meta: str) -> Answer:
        return cls(errors.HTTP_STATUS[code], errors.body(code, text, reason, metadata=meta))


def _host_and_path(path: str, host_header: str) -> tuple[str, str]:
    """The Google host a request is for and its path on that host."""
    first, sep, rest = path[1:].partition("/")
    if first.endswith(".googleapis.com"):
        return first, "/" + rest if sep else "/"
    return host_header.split(":")[0], path


class _Handler(QuietHandler):
    server: RestDoor
    wbufsize = WRITE_BUFFER
    """An answer's head and body leave in one ``send`` (:meth:`_send` flushes): two writes
    cost a second system call and, on a busy emulator, a second wait for the GIL after it."""

    def handle_expect_100(self) -> bool:
        """``Expect: 100-continue``: the interim answer is sent at once, not buffered."""
        sent = super().handle_expect_100()
        self.wfile.flush()
        return sent

    def _dispatch(self) -> None:
        body: list[Body] = []
        try:
            answer = self._answer(body)
        except Exception:
            _log.exception("REST door: %s %s", self.command, urlsplit(self.path).path[:80])
            answer = Answer.error(
                grpc.StatusCode.INTERNAL,
                "the emulator's REST door failed to serve this request; its log "
                "(emulator.log in the emulator's root) says why",
            )
        if body and not body[0].done:
            self.close_connection = True
        elif not body and (self.headers.get("Content-Length") or "0").strip() not in ("", "0"):
            self.close_connection = True
        try:
            self._send(answer)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send(self, answer: Answer) -> None:
        self.send_response(answer.status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(answer.body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(answer.body)
        self.wfile.flush()

    def _token(self, body: list[Body]) -> Answer:
        """Google's token endpoint (``oauth2.googleapis.com/token``): the secret for the
        secret (:func:`trainpool.emulator.cloud_storage.access.token_grant`)."""
        try:
            reader = Body(self.rfile, self.headers, MAX_TOKEN_BODY)
            body.append(reader)
            payload = reader.read(MAX_TOKEN_BODY)
        except ApiError as err:
            return Answer(
                400,
                json.dumps({"error": "invalid_request", "error_description": err.message}).encode(),
            )
        status, grant = token_grant(self.server.key.secret, payload)
        return Answer(status, json.dumps(grant).encode())

    def _answer(self, body: list[Body]) -> Answer:
        raw = urlsplit(self.path)
        token_host, token_path = _host_and_path(raw.path, self.headers.get("Host") or "")
        if (
            self.command == "POST"
            and api_of(token_host) in TOKEN_APIS
            and token_path in TOKEN_PATHS
        ):
            return self._token(body)
        path = self.server.key.admit(raw.path, self.headers.get("Authorization"))
        if path is None:
            return Answer.error(grpc.StatusCode.PERMISSION_DENIED, UNAUTHORISED, "FORBIDDEN")
        host, api_path = _host_and_path(path, self.headers.get("Host") or "")
        api = api_of(host)
        if api is None or api not in self.server.routers:
            return _service_disabled(host)
        found = self.server.routers.get(api).match(self.command, api_path)
        if found is None:
            return _no_route(self.server, api, self.command, api_path, host)
        route, values = found
        service = self.server.service(route.service)
        if service is None or route.method not in service.methods:
            text = unserved_message(route.service, route.method, self.server.state.services)
            return Answer.error(grpc.StatusCode.UNIMPLEMENTED, text, "NOT_EMULATED")
        if service.methods[route.method].streaming:
            text = (
                f"{service.short}.{route.method} is a bidirectional stream: the emulator "
                "serves it over gRPC only"
            )
            return Answer.error(grpc.StatusCode.UNIMPLEMENTED, text, "GRPC_ONLY")
        try:
            reader = Body(self.rfile, self.headers, MAX_BODY)
            body.append(reader)
            payload = reader.read(MAX_BODY)
        except ApiError as err:  # 400 malformed, 413 too large: the body's own status
            self.close_connection = True
            code = grpc.StatusCode.INVALID_ARGUMENT
            return Answer(err.status, errors.body(code, err.message, http=err.status))
        query = parse_qsl(raw.query, keep_blank_values=True)
        method = service.methods[route.method]
        try:
            request = transcode.build(
                new_message(method.request_type), route.body, payload, values, query
            )
            response = service.call(route.method, wrap_message(method.request_type, request))
        except InputError as err:
            return Answer.error(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        except RpcError as err:
            return Answer.error(err.code, err.message)
        rendered = transcode.render(raw_message(response), transcode.wants_int_enums(query))
        return Answer(200, rendered)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _dispatch  # noqa: N815


def _service_disabled(host: str) -> Answer:
    served = ", ".join(f"{api}.googleapis.com" for api in SERVED_APIS)
    text = (
        f"{host or 'this host'} is not served by the trainpool emulator, so the call fails here "
        f"instead of reaching Google; it serves {served} (and Cloud Storage at "
        "STORAGE_EMULATOR_HOST)"
    )
    return Answer.error(
        grpc.StatusCode.PERMISSION_DENIED, text, "SERVICE_DISABLED", service=host or ""
    )


def _no_route(door: RestDoor, api: str, verb: str, path: str, host: str) -> Answer:
    allowed = door.routers.get(api).allowed(path)
    if allowed:
        text = f"{verb} is not a method of {host}{path}; accepted: {', '.join(allowed)}"
        return Answer.error(grpc.StatusCode.UNIMPLEMENTED, text)
    text = f"no method of {host} is at {verb} {path[:200]} (the URL matches none of its rules)"
    return Answer.error(grpc.StatusCode.NOT_FOUND, text)


class RestDoor(Loopback):
    """The REST door on ``127.0.0.1``; ``address`` is ``http://127.0.0.1:PORT``.

    Each connection has a thread of its own, which answers its requests as they come. No
    bound on how many are answered at once: a semaphore of the gRPC door's 8 handlers, tried
    before, made the door twice as slow at 20 clients (its waits cost more than they saved:
    the benchmarks page)."""

    def __init__(self, state: Any, key: DoorKey, port: int = 0) -> None:
        super().__init__(_Handler, port, "rest-door")
        self.state = state
        self.address = f"http://127.0.0.1:{self.port}"
        self.key = DoorKey(self.address, key.secret, key.token_file)
        self.routers = Routers(SERVED_APIS)

    def service(self, name: str) -> Service | None:
        found = self.state.services.get(name)
        if found is None and self.state.twins is not None:
            found = self.state.twins.get(name)
        return found
