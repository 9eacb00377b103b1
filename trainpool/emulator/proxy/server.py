"""The emulator's HTTPS proxy: every client that honours ``HTTPS_PROXY`` reaches the emulator
at Google's own URLs, and nothing reaches Google.

Clients build Google's URLs themselves: curl from the REST reference
(``https://LOCATION-aiplatform.googleapis.com/v1/...``), gcloud's Cloud Build log tailer
(``https://storage.googleapis.com/BUCKET/log-ID.txt``), gsutil, TensorFlow's Cloud Storage
file system, the SDK's REST transport. ``trainpool exec`` gives them this proxy
(``HTTPS_PROXY``; loopback stays direct, ``NO_PROXY``) and a CA bundle that trusts the
emulator's authority (:mod:`.certs`). A ``CONNECT`` to:

- a Google API host (``*.googleapis.com``, port 443): the proxy answers TLS for it itself and
  serves the requests inside: Cloud Storage (``storage.googleapis.com``; the JSON API's
  paths on ``www.googleapis.com``) by the storage door, everything else by the REST door
  (which routes by the ``Host``, serves the APIs the emulator emulates, refuses the others
  by name, and issues tokens for the refresh token it gave: ``oauth2.googleapis.com/token``).
  A client that offers only HTTP/2 (gRPC) is joined to the emulator's gRPC server;
- another Google host (``*.google.com``, ``*.googleusercontent.com``, container registries,
  the metadata server): refused, 403 naming it;
- any other host (a package index, a dataset's server): passed through, as a proxy does
  (through ``HTTPS_PROXY`` of the emulator's own environment when it has one).

Both doors check the caller's secret as always (a bearer token or the path), so the proxy,
which any local user can connect to, gives nothing away: it only carries requests. A
request that is not ``CONNECT`` is answered 405.
"""

from __future__ import annotations

import logging
import os
import select
import socket
import socketserver
import ssl
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from trainpool.emulator.loopback import Loopback

_log = logging.getLogger(__name__)
MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT_S = 15.0
IDLE_S = 300.0
REFUSED_SUFFIXES = (
    ".google.com",
    ".googleusercontent.com",
    ".gcr.io",
    ".pkg.dev",
    ".google.internal",
)
REFUSED_HOSTS = ("google.com", "gcr.io", "pkg.dev", "metadata.google.internal", "169.254.169.254")
Serve = Callable[[Any, tuple[str, int], str], None]
"""Serves HTTP/1.1 on a TLS socket for a host: ``serve(socket, client address, host)``."""


def is_google_api(host: str) -> bool:
    host = host.lower().rstrip(".")
    return host == "googleapis.com" or host.endswith(".googleapis.com")


def is_refused(host: str) -> bool:
    host = host.lower()
    return host in REFUSED_HOSTS or any(host.endswith(s) for s in REFUSED_SUFFIXES)


def _upstream(own: str) -> tuple[str, int] | None:
    """The proxy of this process's environment (for passing other hosts on), unless it is
    this proxy itself."""
    for name in ("https_proxy", "HTTPS_PROXY"):
        value = os.environ.get(name, "")
        if value and value.rstrip("/") != own:
            url = urlsplit(value if "://" in value else f"http://{value}")
            if url.scheme == "http" and url.hostname:
                return url.hostname, url.port or 80
    return None


class _Handler(socketserver.StreamRequestHandler):
    server: ProxyServer
    timeout = IDLE_S

    def _answer(self, status: int, reason: str, text: str = "") -> None:
        body = (text + "\n").encode() if text else b""
        head = f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\n"
        head += "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
        self.wfile.write(head.encode() + body)

    def _head(self) -> tuple[str, str] | None:
        """The request's method and target; its headers are read and dropped."""
        line = self.rfile.readline(MAX_HEAD)
        parts = line.decode("latin-1").split()
        read = len(line)
        while True:
            header = self.rfile.readline(MAX_HEAD)
            read += len(header)
            if header in (b"\r\n", b"\n", b"") or read > MAX_HEAD:
                break
        if len(parts) != 3 or read > MAX_HEAD:
            self._answer(400, "Bad Request", "a request line METHOD TARGET HTTP/1.1")
            return None
        return parts[0].upper(), parts[1]

    def handle(self) -> None:
        try:
            head = self._head()
            if head is None:
                return
            method, target = head
            if method != "CONNECT":
                self._answer(
                    405,
                    "Method Not Allowed",
                    f"the trainpool emulator's proxy carries HTTPS (CONNECT) only, not {method} "
                    f"{target[:200]}",
                )
                return
            host, _, port_text = target.rpartition(":")
            host = host.strip("[]")
            if not host or not port_text.isdigit():
                self._answer(400, "Bad Request", "CONNECT HOST:PORT")
                return
            port = int(port_text)
            if is_google_api(host) and port == 443:
                self._answer_tls(host)
            elif is_google_api(host) or is_refused(host):
                self._answer(
                    403,
                    "Forbidden",
                    f"{host}:{port} is a Google host the trainpool emulator does not serve; the "
                    "call fails here instead of reaching Google",
                )
            else:
                self._tunnel(host, port)
        except (OSError, ssl.SSLError):
            pass

    def _answer_tls(self, host: str) -> None:
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.wfile.flush()
        tls = self.server.tls.wrap_socket(self.connection, server_side=True)
        if tls.selected_alpn_protocol() == "h2":
            self.server.join_grpc(tls)
            return
        self.server.serve_http(tls, self.client_address, host.lower())

    def _tunnel(self, host: str, port: int) -> None:
        upstream = None if bypassed(host) else self.server.upstream
        try:
            if upstream is None:
                remote = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
            else:
                remote = socket.create_connection(upstream, timeout=CONNECT_TIMEOUT_S)
                remote.sendall(
                    f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
                )
                answer = remote.recv(MAX_HEAD)
                if not answer.split(b"\r\n", 1)[0].split()[1:2] == [b"200"]:
                    self._answer(502, "Bad Gateway", f"the upstream proxy refused {host}:{port}")
                    remote.close()
                    return
        except OSError as err:
            self._answer(502, "Bad Gateway", f"{host}:{port} could not be reached: {err}")
            return
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.wfile.flush()
        relay(self.connection, remote)


def relay(one: socket.socket, other: socket.socket) -> None:
    """Copy bytes both ways until either side ends (or stays idle :data:`IDLE_S`)."""
    sockets = [one, other]
    try:
        for sock in sockets:
            sock.settimeout(None)
        while True:
            ready, _, _ = select.select(sockets, [], [], IDLE_S)
            if not ready:
                return
            for sock in ready:
                if isinstance(sock, ssl.SSLSocket):
                    data = sock.recv(1 << 16)
                    while sock.pending():
                        data += sock.recv(sock.pending())
                else:
                    data = sock.recv(1 << 16)
                if not data:
                    return
                (other if sock is one else one).sendall(data)
    except OSError:
        return
    finally:
        for sock in sockets:
            try:
                sock.close()
            except OSError:
                pass


class ProxyServer(Loopback):
    """The proxy on ``127.0.0.1``; ``address`` is ``http://127.0.0.1:PORT``."""

    def __init__(
        self,
        tls: ssl.SSLContext,
        serve_http: Serve,
        grpc_address: str,
        port: int = 0,
    ) -> None:
        super().__init__(_Handler, port, "https-proxy")
        self.tls = tls
        self.serve_http = serve_http
        self.grpc_address = grpc_address
        self.address = f"http://127.0.0.1:{self.port}"
        self.upstream = _upstream(self.address)

    def join_grpc(self, tls: ssl.SSLSocket) -> None:
        """An HTTP/2 client (gRPC) joined to the emulator's gRPC server."""
        address = self.grpc_address
        try:
            if address.startswith("unix:"):
                remote = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                remote.connect(address[len("unix:") :].replace("//", "/", 1))
            else:
                host, _, port = address.rpartition(":")
                remote = socket.create_connection((host, int(port)))
        except OSError:
            tls.close()
            return
        relay(tls, remote)


def bypassed(host: str) -> bool:
    """Whether this environment's ``NO_PROXY`` leaves ``host`` direct."""
    check = getattr(urllib.request, "proxy_bypass_environment", None)
    return bool(check(host)) if check is not None else False
