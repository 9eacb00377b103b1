"""A root is its owner's alone: 0700, its files 0600, and another local user gets nothing
(not the database, not a job log, not the socket, not the storage door)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.jobs import wait_job
from fixtures.other_user import NOBODY, SYSTEM_PYTHON, as_another_user, shared_folder
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.emulator import private_root
from trainpool.home import Home
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(90)
SECRET_ENV = "API_KEY"
SECRET_VALUE = "sk-not-for-nobody-1234"


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def run_a_job(emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch) -> str:
    """A job whose env holds a secret and whose log holds output; its id."""
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
    client = job_client("us-central1")
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {
            "image_uri": "local/none",
            "command": [sys.executable, "-c", "import os; print(os.environ['API_KEY'])"],
            "env": [{"name": SECRET_ENV, "value": SECRET_VALUE}],
        },
    }
    job = {"display_name": "private", "job_spec": {"worker_pool_specs": [pool]}}
    created = client.create_custom_job(parent=PARENT, custom_job=job)
    done = wait_job(client.get_custom_job, created.name, 30)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    return created.name.rsplit("/", 1)[1]


def test_the_root_and_what_the_emulator_writes_are_the_owners_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    root.mkdir(mode=0o755)
    (root / "emulator.sqlite").write_bytes(b"")  # left world-readable by an older version
    os.chmod(root / "emulator.sqlite", 0o644)
    (root / "jobs").mkdir(mode=0o755)
    before = os.umask(0o022)
    try:
        with emulator.start(root) as emu:
            current = os.umask(0)
            os.umask(current)
            assert current & 0o077 == 0o077, "the process's umask keeps others out"
            job_id = run_a_job(emu, monkeypatch)
            home = Home(emu.root)
            assert mode(home.root) == 0o700
            for path in (home.database, home.lock, home.storage_token):
                assert mode(path) == 0o600, path
            for suffix in ("-wal", "-shm"):
                wal = home.database.with_name(home.database.name + suffix)
                assert not wal.exists() or mode(wal) == 0o600
            assert mode(root / "jobs") == 0o700
            files = home.job(job_id)
            assert SECRET_VALUE in files.replica_log("workerpool0-0").read_text()
            for path in [files.dir, *files.dir.rglob("*")]:
                if path.is_symlink():  # a replica's Python links to this machine's interpreter
                    continue
                assert mode(path) & 0o077 == 0, f"{path} is readable by others"
    finally:
        os.umask(before)


def test_make_private_names_the_root_it_cannot_change(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may change any folder")
    with pytest.raises(PermissionError, match="root: /: cannot make it its owner's only"):
        private_root.make_private(Path("/"))


PROBE = r"""
import socket, sys, urllib.request, urllib.error
root, door, sock = sys.argv[1], sys.argv[2], sys.argv[3]
for name in ("emulator.sqlite", "emulator.lock", "storage.token", "jobs"):
    try:
        open(f"{root}/{name}", "rb").read()
        print("READ", name)
    except (PermissionError, IsADirectoryError):
        pass
try:
    open(sys.argv[4], "rb").read()
    print("READ job log")
except PermissionError:
    pass
upload = "/upload/storage/v1/b/bkt/o?uploadType=media&name=planted"
for url in (door + "/storage/v1/b/bkt/o", door + upload):
    data = b"planted" if "upload" in url else None
    request = urllib.request.Request(url, data=data, headers={"Authorization": "Bearer guess"})
    try:
        urllib.request.urlopen(request, timeout=10)
        print("DOOR OPEN", url)
    except urllib.error.HTTPError as err:
        print("DOOR", err.code)
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sock)
    print("SOCKET OPEN")
except PermissionError:
    print("SOCKET refused")
"""


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder every user may enter: only the root's own modes keep others out."""
    with shared_folder() as folder:
        yield folder


@as_another_user
def test_another_local_user_gets_nothing(shared: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with emulator.start(shared / "root") as emu:
        assert emu.storage_address is not None
        (emu.root / "gcs" / "bkt").mkdir(parents=True)
        job_id = run_a_job(emu, monkeypatch)
        log = Home(emu.root).job(job_id).replica_log("workerpool0-0")
        door = emu.storage_address.rsplit("/", 1)[0]
        args = [str(emu.root), door, emu.address.removeprefix("unix:"), str(log)]
        nobody = [*NOBODY, SYSTEM_PYTHON, "-I", "-c", PROBE, *args]
        probe = subprocess.run(nobody, capture_output=True, text=True, timeout=60, check=False)
        assert probe.returncode == 0, probe.stderr
        assert "READ" not in probe.stdout and "OPEN" not in probe.stdout, probe.stdout
        assert probe.stdout.split() == ["DOOR", "403", "DOOR", "403", "SOCKET", "refused"]
        # with the root opened up by hand, each file's own mode still keeps nobody out
        for folder in (emu.root, log.parent.parent, log.parent):
            folder.chmod(0o755)
        probe = subprocess.run(nobody, capture_output=True, text=True, timeout=60, check=False)
        assert probe.returncode == 0, probe.stderr
        assert "READ" not in probe.stdout and "OPEN" not in probe.stdout, probe.stdout
        assert not (emu.root / "gcs" / "bkt" / "planted").exists()
        # the owner, with the secret, is let in
        listed = urllib.request.urlopen(emu.storage_address + "/storage/v1/b/bkt/o", timeout=10)
        assert listed.status == 200
