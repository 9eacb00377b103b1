"""Where the emulator listens: a Unix socket only its owner can use, or a loopback port.

The default is ``<root>/emulator.sock``, mode 0600: anyone who can reach the
emulator can have it run ``containerSpec.command`` as its owner, so only the owner
may. The socket is bound inside a fresh 0700 directory, made 0600, then moved into
place, so no other user can connect in between. A root whose path is too long for a
socket address (108 bytes on Linux) gets its socket in a private temporary directory.
A TCP port on 127.0.0.1 (``port=``) is reachable by every local user: an opt-in.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import grpc

from trainpool.home import Home

HOST = "127.0.0.1"
MAX_SOCKET_PATH = 107


def _bind(server: grpc.Server, target: str) -> int:
    try:
        return server.add_insecure_port(target)
    except RuntimeError:
        return 0


def listen_tcp(server: grpc.Server, port: int) -> str:
    """Listen on ``127.0.0.1:port`` (0: any free port); the address, ``HOST:PORT``."""
    bound = _bind(server, f"{HOST}:{port}")
    if bound == 0:
        raise OSError(
            f"port: {port}: cannot listen on {HOST}:{port} (in use?); "
            "accepted: a free port, or 0 for any free port"
        )
    return f"{HOST}:{bound}"


def socket_path(home: Home) -> Path:
    """``<root>/emulator.sock``, or a private temporary one when that path is too long."""
    path = home.socket
    if len(str(path)) + len("/.s-XXXXXXXX") <= MAX_SOCKET_PATH:
        return path
    return Path(tempfile.mkdtemp(prefix="trainpool-")) / path.name


def listen_unix(server: grpc.Server, path: Path) -> str:
    """Listen on the Unix socket ``path`` (mode 0600); the address, ``unix:PATH``."""
    path.unlink(missing_ok=True)  # the root lock is held: a socket left here is stale
    private = Path(tempfile.mkdtemp(prefix=".s-", dir=path.parent))
    try:
        staged = private / "s"
        if _bind(server, f"unix:{staged}") == 0:
            raise OSError(f"root: cannot listen on unix:{path}; accepted: a writable root")
        os.chmod(staged, 0o600)
        os.replace(staged, path)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    return f"unix:{path}"


def forget(address: str) -> None:
    """Remove the socket file of ``address`` (and its private directory) after the server stops."""
    if not address.startswith("unix:"):
        return
    path = Path(address.removeprefix("unix:"))
    path.unlink(missing_ok=True)
    if path.parent.name.startswith("trainpool-"):
        shutil.rmtree(path.parent, ignore_errors=True)
