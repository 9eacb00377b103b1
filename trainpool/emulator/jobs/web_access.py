"""A way into a running replica, as Vertex's interactive shell gives one (``enableWebAccess``).

On Vertex, ``CustomJobSpec.enable_web_access`` gives each training node an interactive
shell, whose URI is in ``CustomJob.web_access_uris`` under the node's name
(``workerpool0-0``, ...), "Only available if job_spec.enable_web_access is true"
(aiplatform v1 ``custom_job.proto``; https://cloud.google.com/vertex-ai/docs/training/monitor-debug-interactive-shell:
a shell in the training container, to inspect its files and run commands, e.g. ``py-spy``,
while it trains). Locally each replica gets one too: this script starts the replica's
command as its child and, while it runs, serves a Unix socket; each connection gets a
shell (``bash`` where there is one, else ``sh``) on a terminal of its own, in the replica's
working directory, with its environment, in its mount namespace (``/gcs``). The socket is
the owner's alone (mode 0600, in a 0700 folder of the store, whose root is 0700 too); its
address, ``unix:PATH``, is the replica's entry in ``web_access_uris``.

Run as ``python -I -S web_access.py SOCKET -- ARGV...`` (standard library only). It exits
as the replica does (the same status, or the same signal), taking its shells along;
SIGTERM and SIGINT, which reach the replica's whole process group, are left to the
replica. ``python -m trainpool.emulator.jobs.web_access connect unix:PATH`` (or ``socat
-,raw,echo=0 UNIX-CONNECT:PATH``) opens a shell.
"""

from __future__ import annotations

import contextlib
import os
import pty
import selectors
import shutil
import signal
import socket
import sys
import termios
import threading
import tty
from collections.abc import Iterator

SCHEME = "unix:"


def _relay(conn: socket.socket, cwd: str) -> None:
    """One connection: a shell on a terminal of its own, bytes both ways until either ends."""
    shell = shutil.which("bash") or "/bin/sh"
    pid, master = pty.fork()
    if pid == 0:  # the shell, in the replica's directory and environment
        with contextlib.suppress(OSError):
            os.chdir(cwd)
        os.execv(shell, [shell, "-i"])
    selector = selectors.DefaultSelector()
    selector.register(conn, selectors.EVENT_READ)
    selector.register(master, selectors.EVENT_READ)
    try:
        while True:
            for key, _ in selector.select():
                if key.fileobj is conn:
                    data = conn.recv(65536)
                    if not data:
                        return
                    os.write(master, data)
                else:
                    try:
                        data = os.read(master, 65536)
                    except OSError:  # the shell ended
                        return
                    if not data:
                        return
                    conn.sendall(data)
    except OSError:
        return
    finally:
        selector.close()
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGHUP)
        with contextlib.suppress(OSError):
            os.close(master)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, 0)
        conn.close()


def _serve(server: socket.socket, cwd: str) -> None:
    while True:
        try:
            conn, _ = server.accept()
        except OSError:  # closed: the replica ended
            return
        threading.Thread(target=_relay, args=(conn, cwd), daemon=True).start()


@contextlib.contextmanager
def _beside(path: str) -> Iterator[str]:
    """``path``'s name, with the working directory its folder meanwhile: a socket's address
    is limited to 107 bytes, a store's paths are not."""
    here = os.getcwd()
    os.chdir(os.path.dirname(path) or ".")
    try:
        yield os.path.basename(path)
    finally:
        os.chdir(here)


def _listen(path: str) -> socket.socket:
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        with _beside(path) as name:
            server.bind(name)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    server.listen(8)
    return server


def run(path: str, argv: list[str]) -> int:
    """Start ``argv``, serve shells on ``path`` while it runs; its wait status."""
    for stop in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop, signal.SIG_IGN)  # the replica's group gets them: the replica decides
    try:
        server = _listen(path)
    except OSError as err:
        print(f"web access: cannot listen on {path}: {err}", file=sys.stderr, flush=True)
        server = None
    child = os.fork()
    if child == 0:
        for stop in (signal.SIGTERM, signal.SIGINT):
            signal.signal(stop, signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as err:
            print(f"cannot start {argv[0]!r}: {err}", file=sys.stderr, flush=True)
            os._exit(127)
    if server is not None:
        threading.Thread(target=_serve, args=(server, os.getcwd()), daemon=True).start()
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    if server is not None:
        server.close()
        with contextlib.suppress(OSError):
            os.unlink(path)
    return status


def _exit_as(status: int) -> None:
    """End this process as the replica ended: its exit code, or its signal."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def connect(uri: str) -> int:
    """A terminal session on the shell at ``uri`` (``unix:PATH``)."""
    if not uri.startswith(SCHEME):
        print(f"uri: {uri!r}; accepted: {SCHEME}PATH (a CustomJob's web_access_uris)")
        return 2
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with _beside(uri[len(SCHEME) :]) as name:
        conn.connect(name)
    interactive = os.isatty(0)
    saved = termios.tcgetattr(0) if interactive else None
    if interactive:
        tty.setraw(0)
    try:
        selector = selectors.DefaultSelector()
        selector.register(conn, selectors.EVENT_READ)
        selector.register(0, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is conn:
                    data = conn.recv(65536)
                    if not data:
                        return 0
                    os.write(1, data)
                else:
                    data = os.read(0, 65536)
                    if not data:
                        conn.shutdown(socket.SHUT_WR)
                        selector.unregister(0)
                        continue
                    conn.sendall(data)
    finally:
        if saved is not None:
            termios.tcsetattr(0, termios.TCSADRAIN, saved)
        conn.close()


def main(args: list[str]) -> None:
    if len(args) == 2 and args[0] == "connect":
        sys.exit(connect(args[1]))
    if len(args) < 3 or args[1] != "--":
        print("usage: web_access.py SOCKET -- ARGV... | connect unix:PATH", file=sys.stderr)
        sys.exit(2)
    _exit_as(run(args[0], args[2:]))


if __name__ == "__main__":
    main(sys.argv[1:])
