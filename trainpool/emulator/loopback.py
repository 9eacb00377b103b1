"""What the emulator's loopback servers share: the storage door, the REST door, the HTTPS proxy.

Each listens on ``127.0.0.1`` (a free port unless given), serves each connection on a
thread of its own, runs its loop on a named daemon thread, and notices a stop within
:data:`SHUTDOWN_POLL_S` (socketserver's default, 0.5 s, made every emulator's stop wait about
that long). Their HTTP handlers answer HTTP/1.1 with ``TCP_NODELAY`` (an answer's head and
body are two writes; without it the body waits for the client's delayed ACK of the head,
40 ms a request on Linux) and log nothing to the terminal.
"""

from __future__ import annotations

import socket
import socketserver
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any, TypeVar

SHUTDOWN_POLL_S = 0.05
S = TypeVar("S", bound="Loopback")


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1, ``TCP_NODELAY``, no access log."""

    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass


class Loopback(socketserver.ThreadingMixIn, socketserver.TCPServer):
    """A threading TCP server on ``127.0.0.1:port``, started and stopped with its loop's
    thread (named ``name``)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, handler: Any, port: int = 0, name: str = "loopback") -> None:
        super().__init__(("127.0.0.1", port), handler)
        self.port = int(self.server_address[1])
        self._thread = threading.Thread(
            target=self.serve_forever, args=(SHUTDOWN_POLL_S,), name=name, daemon=True
        )

    def start(self: S) -> S:
        self._thread.start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()
