"""The emulator's socket is its owner's alone; a port is an explicit opt-in."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from fixtures.processes import signal_other_thread
from fixtures.vertex import PARENT

import trainpool.emulator as emulator
from trainpool.emulator import listen
from trainpool.home import Home
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(60)
CONNECT = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    "try:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n    sys.exit(13)\n"
)


def test_the_default_transport_is_a_socket_only_its_owner_may_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with emulator.start(tmp_path / "root") as emu:
        assert emu.address == f"unix:{tmp_path.resolve() / 'root' / 'emulator.sock'}"
        assert emu.port is None
        mode = os.stat(emu.address.removeprefix("unix:")).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        assert list(job_client("us-central1").list_custom_jobs(parent=PARENT)) == []
    assert not (tmp_path / "root" / "emulator.sock").exists()


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to act as another user",
)
def test_another_user_cannot_connect() -> None:
    shared = Path(tempfile.mkdtemp(prefix="trainpool-shared-"))
    try:
        shared.chmod(0o755)  # others may look in: only the socket's own mode keeps them out
        with emulator.start(shared / "root") as emu:
            (shared / "root").chmod(0o755)
            socket_path = emu.address.removeprefix("unix:")
            nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
            probe = subprocess.run(
                [*nobody, "python3", "-I", "-c", CONNECT, socket_path], timeout=30, check=False
            )
            assert probe.returncode == 13
            mine = subprocess.run(["python3", "-I", "-c", CONNECT, socket_path], timeout=30)
            assert mine.returncode == 0
    finally:
        shutil.rmtree(shared)


def test_a_root_too_long_for_a_socket_gets_a_private_one(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 100)
    path = listen.socket_path(Home(deep))
    try:
        assert path.name == "emulator.sock" and len(str(path)) <= listen.MAX_SOCKET_PATH
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    finally:
        shutil.rmtree(path.parent)


def test_a_port_is_loopback_tcp(tmp_path: Path) -> None:
    with emulator.start(tmp_path / "root", port=0) as emu:
        assert emu.address == f"127.0.0.1:{emu.port}"


def test_a_port_is_announced_as_reachable_by_every_local_user(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="trainpool.emulator"):
        with emulator.start(tmp_path / "root", port=0) as emu:
            pass
    assert f"listens on {emu.address}: any local user can reach this port" in caplog.text
    assert "run code as you" in caplog.text
    caplog.clear()
    with emulator.start(tmp_path / "root"):
        pass
    assert "any local user" not in caplog.text, "the socket is the owner's: nothing to warn"


def test_the_cli_says_so_in_its_help_and_its_start_up_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from trainpool.cli import app

    shown = CliRunner().invoke(app, ["emulator", "--help"], env={"COLUMNS": "1000"}).stdout
    help_text = " ".join(shown.replace("│", " ").split())
    assert "UNSAFE on a shared machine: any local user can reach a port" in help_text
    assert "run code as you" in help_text and "--no-storage" in help_text
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for extra, says in (
        (["--port", "0"], "WARNING: any local user can reach this port"),
        ([], "(root {root}; owner only)"),
    ):
        root = tmp_path / f"root{len(extra)}"
        cli = subprocess.Popen(
            [sys.executable, "-m", "trainpool.cli", "emulator", "--root", str(root), *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert cli.stdout is not None
            first = cli.stdout.readline()
            storage_line = cli.stdout.readline()
        finally:
            cli.send_signal(signal.SIGTERM)
            _, err = cli.communicate(timeout=30)
        assert says.format(root=root.resolve()) in first, first
        assert "run code as you" in first or not extra
        assert "/<secret>" in storage_line and "owner only" in storage_line
        secret = (root / "storage.token").read_text().strip() if root.exists() else "-"
        assert secret not in first + storage_line, "the secret is not on stdout"
        assert "export STORAGE_EMULATOR_HOST=http://127.0.0.1:" in err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_cli_stops_on_a_signal_the_kernel_gives_another_thread(
    tmp_path: Path, signum: int
) -> None:
    """A signal to a process goes to any of its threads (gRPC's, the doors'); Python runs its
    handler in the main thread only, and a main thread blocked for good never ran it: a
    `systemctl stop` or a Ctrl-C that landed on another thread left the emulator running."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    cli = subprocess.Popen(
        [sys.executable, "-m", "trainpool.cli", "emulator", "--root", str(tmp_path / "root")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert cli.stdout is not None and "listening" in cli.stdout.readline()
        signal_other_thread(cli.pid, signum)
        assert cli.wait(timeout=20) == 0
    finally:
        cli.kill()
        cli.wait()
