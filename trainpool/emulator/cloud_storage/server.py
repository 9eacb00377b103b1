"""The local store's Cloud Storage JSON API door, for ``STORAGE_EMULATOR_HOST``.

One store, three doors: the object ``gs://BUCKET/OBJECT`` is the file
``<root>/gcs/BUCKET/OBJECT`` (by path), ``/gcs/BUCKET/OBJECT`` in a replica, and, here,
the JSON API on ``http://127.0.0.1:PORT`` for clients that honour
``STORAGE_EMULATOR_HOST`` (google-cloud-storage, the aiplatform SDK's bucket checks).
This module is the HTTP plumbing; what is served is :mod:`.routes`, over the store's
buckets and objects (:mod:`.objects`).

Loopback only, no authentication (a client with ``STORAGE_EMULATOR_HOST`` sends none):
every local user can reach the port, so the emulator serves it only when asked
(``start(..., storage=True)``, ``trainpool emulator --storage``).
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from trainpool.emulator.cloud_storage import routes
from trainpool.emulator.cloud_storage.objects import ApiError, Objects, not_served
from trainpool.emulator.cloud_storage.uploads import Uploads
from trainpool.home import Home


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: StorageServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    def _body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                return self._chunked()
            return b""
        return self.rfile.read(int(length))

    def _chunked(self) -> bytes:
        out = bytearray()
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(out)
            out += self.rfile.read(size)
            self.rfile.readline()

    def _send(self, response: routes.Response) -> None:
        self.send_response(response.status)
        for key, value in response.headers.items():
            self.send_header(key, value)
        if response.body or response.status not in (204, 304):
            self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def _dispatch(self) -> None:
        raw = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(raw.query, keep_blank_values=True).items()}
        try:
            request = routes.Request(
                self.command, raw.path, query, self.headers, self._body(), self.server.address
            )
            found = routes.route(request)
            if found is None:
                raise not_served(request)
            handler, match = found
            self._send(handler(self.server.store, request, match))
        except ApiError as err:
            error = {
                "code": err.status,
                "message": err.message,
                "errors": [{"message": err.message, "domain": "global", "reason": err.reason}],
            }
            self._send(routes.Response.json({"error": error}, err.status))

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _dispatch  # noqa: N815


class StorageServer(ThreadingHTTPServer):
    """The JSON API door of one store, on ``127.0.0.1``; ``address`` is ``http://127.0.0.1:PORT``."""

    daemon_threads = True

    def __init__(self, home: Home, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.address = f"http://127.0.0.1:{self.server_address[1]}"
        objects = Objects(home.gcs, self.address)
        self.store = routes.Store(objects, Uploads(objects, home.storage_uploads))
        self._thread = threading.Thread(
            target=self.serve_forever, name="storage-json-api", daemon=True
        )

    def start(self) -> StorageServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.store.uploads.close()


def serve(home: Home, port: int = 0) -> StorageServer:
    """Serve ``home``'s ``gcs/`` through the JSON API on ``127.0.0.1:port`` (0: a free port)."""
    return StorageServer(home, port).start()
