"""The local store's Cloud Storage JSON API door, for ``STORAGE_EMULATOR_HOST`` and gcloud.

One store, three doors: the object ``gs://BUCKET/OBJECT`` is the file
``<root>/gcs/BUCKET/OBJECT`` (by path), ``/gcs/BUCKET/OBJECT`` in a replica, and, here,
the JSON API on ``http://127.0.0.1:PORT/<secret>`` for google-cloud-storage (the aiplatform
SDK's bucket checks too) and ``gcloud storage``. This module is the HTTP plumbing; what is
served is :mod:`.routes`, over the store's buckets and objects (:mod:`.objects`).

Owner-only: a request that does not prove the root's secret (:mod:`.access`) is answered
403 before its body is read. Bodies are streamed (:mod:`.bodies`), downloads sent in
chunks; a malformed request answers 400 and an unexpected failure 500 with no internal
text, never a dropped connection.
"""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from trainpool.emulator.cloud_storage import routes
from trainpool.emulator.cloud_storage.access import (
    TOKEN_PATHS,
    DoorKey,
    new_secret,
    token_grant,
)
from trainpool.emulator.cloud_storage.bodies import CHUNK, DEFAULT_LIMIT, Body, too_large
from trainpool.emulator.cloud_storage.objects import ApiError, Objects, not_served
from trainpool.emulator.cloud_storage.uploads import Uploads
from trainpool.emulator.loopback import Loopback, QuietHandler
from trainpool.home import Home
from trainpool.redirect.files import write_private

_log = logging.getLogger(__name__)
_DRAIN = 1 << 20
"""An unread body up to this size is read and dropped, so the client gets the answer."""
UNAUTHORISED = (
    "this Cloud Storage door serves its owner only; accepted: the URL with the root's secret "
    "(STORAGE_EMULATOR_HOST as the emulator printed it) or Authorization: Bearer <secret> "
    "(CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=<root>/storage.token)"
)


def _error(err: ApiError) -> routes.Response:
    error = {
        "code": err.status,
        "message": err.message,
        "errors": [{"message": err.message, "domain": "global", "reason": err.reason}],
    }
    return routes.Response.json({"error": error}, err.status)


class _Handler(QuietHandler):
    server: StorageServer

    def _is_token_request(self) -> bool:
        return self.command == "POST" and urlsplit(self.path).path in TOKEN_PATHS

    def _refusal(self) -> ApiError | None:
        """403 without the secret (not 401: a client holding anonymous credentials would try
        to refresh them and hide this answer); 413 when ``Content-Length`` passes the limit.
        A token request proves the secret in its body (:func:`access.token_grant`)."""
        path = urlsplit(self.path).path
        if self._is_token_request():
            return None
        if self.server.key.admit(path, self.headers.get("Authorization")) is None:
            return ApiError(403, UNAUTHORISED, "forbidden")
        length = (self.headers.get("Content-Length") or "").strip()
        if length.isdigit() and int(length) > self.server.limit:
            return too_large(int(length), self.server.limit)
        return None

    def handle_expect_100(self) -> bool:
        """Refuse before the client sends its body (``Expect: 100-continue``)."""
        refused = self._refusal()
        if refused is None:
            return super().handle_expect_100()
        self.close_connection = True
        self._send(_error(refused))
        return False

    def _send(self, response: routes.Response) -> None:
        self.send_response(response.status)
        for key, value in response.headers.items():
            self.send_header(key, value)
        size = response.length if response.file is not None else len(response.body)
        if size or response.status not in (204, 304):
            self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(size))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command == "HEAD":
            return
        if response.file is None:
            self.wfile.write(response.body)
            return
        with response.file.open("rb") as handle:
            handle.seek(response.offset)
            left = response.length
            while left > 0:
                piece = handle.read(min(CHUNK, left))
                if not piece:  # the file shrank while it was sent: the client sees a short body
                    self.close_connection = True
                    return
                self.wfile.write(piece)
                left -= len(piece)

    def _answer(self, body: list[Body]) -> routes.Response:
        raw = urlsplit(self.path)
        refused = self._refusal()
        if refused is not None:
            return _error(refused)
        if self._is_token_request():
            body.append(Body(self.rfile, self.headers, self.server.limit))
            status, grant = token_grant(self.server.key.secret, body[0].read())
            return routes.Response.json(grant, status)
        path = self.server.key.admit(raw.path, self.headers.get("Authorization")) or "/"
        query = {k: v[-1] for k, v in parse_qs(raw.query, keep_blank_values=True).items()}
        body.append(Body(self.rfile, self.headers, self.server.limit))
        request = routes.Request(
            self.command, path, query, self.headers, body[0], self.server.address
        )
        found = routes.route(request)
        if found is None:
            raise not_served(request)
        handler, match = found
        return handler(self.server.served, request, match)

    def _dispatch(self) -> None:
        body: list[Body] = []
        try:
            response = self._answer(body)
        except ApiError as err:
            response = _error(err)
        except Exception:
            _log.exception("storage door: %s %s", self.command, urlsplit(self.path).path[:80])
            failed = ApiError(500, "the local store failed to serve this request", "backendError")
            response = _error(failed)
        if not body or not body[0].done:
            self._drain(body[0] if body else None)
        try:
            self._send(response)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _drain(self, body: Body | None) -> None:
        """Read a small unread body (and drop it) so the answer reaches the client and the
        connection can serve the next request; a large or unreadable one closes it."""
        try:
            if body is None:
                body = Body(self.rfile, self.headers, _DRAIN)  # 413/400 when it cannot be
            if body.length is not None and body.length - body.received <= _DRAIN:
                for _ in body.chunks():
                    pass
                return
        except (ApiError, OSError):
            pass
        self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _dispatch  # noqa: N815


class StorageServer(Loopback):
    """The JSON API door of one store on ``127.0.0.1``: ``address`` is
    ``http://127.0.0.1:PORT/<secret>`` (``key`` holds both); no object over ``limit`` bytes.
    The secret is also written, alone, to ``<root>/storage.token`` (mode 0600) for gcloud."""

    def __init__(
        self, home: Home, port: int = 0, limit: int = DEFAULT_LIMIT, secret: str = ""
    ) -> None:
        super().__init__(_Handler, port, "storage-json-api")
        self.limit = limit
        self.key = DoorKey(
            f"http://127.0.0.1:{self.port}",
            secret or new_secret(),
            Path(home.storage_token),
        )
        if not secret:
            write_private(self.key.token_file, self.key.secret + "\n")
        self.address = self.key.url
        objects = Objects(home.gcs, self.address)
        self.served = routes.Served(objects, Uploads(objects, home.storage_uploads, limit))

    def close(self) -> None:
        super().close()
        self.served.uploads.close()


def serve(home: Home, port: int = 0, limit: int = DEFAULT_LIMIT, secret: str = "") -> StorageServer:
    """Serve ``home``'s ``gcs/`` through the JSON API on ``127.0.0.1:port`` (0: a free port),
    behind ``secret`` (already in ``home.storage_token``), else a fresh one written there."""
    return StorageServer(home, port, limit, secret).start()
