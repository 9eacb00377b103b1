"""A replica's own mount namespace, made by the guard's child before it executes the
replica: ``/gcs`` bound to the emulator's store (Vertex mounts Cloud Storage FUSE there:
https://cloud.google.com/vertex-ai/docs/training/code-requirements), the stores a job must
not change read-only, nothing mounted for the rest of the machine, and for a user other
than root a user namespace that maps them to root, as ``unshare --map-root-user`` does."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.other_user import NOBODY, SYSTEM_PYTHON, as_another_user, shared_folder

from trainpool.emulator.jobs import gcs_mount, replica_guard, spawner
from trainpool.emulator.jobs.processes import Launch, Mounts

pytestmark = pytest.mark.timeout(60)

SEES = r"""
import json, os, sys
environ = open("/proc/self/environ", "rb").read().decode().split("\0")[:-1]  # as executed
out = {"env": dict(v.split("=", 1) for v in environ), "bound": os.path.exists("/gcs/bucket/in.txt")}
os.makedirs("/gcs/bucket/out", exist_ok=True)
open("/gcs/bucket/out/x.txt", "w").write("from the replica")
try:
    open(os.path.join(sys.argv[2], "planted"), "w").write("x")
    out["store"] = "written"
except OSError as err:
    out["store"] = err.strerror
json.dump(out, open(sys.argv[1], "w"))
"""


@pytest.fixture
def mount() -> gcs_mount.Mount:
    found = gcs_mount.mount()
    if found.why:
        pytest.skip(f"/gcs is not available to replicas on this machine: {found.why}")
    return found


def test_a_replica_sees_gcs_and_read_only_stores_and_exactly_its_env(
    mount: gcs_mount.Mount, tmp_path: Path
) -> None:
    gcs, store = tmp_path / "gcs", tmp_path / "store"
    (gcs / "bucket").mkdir(parents=True)
    (gcs / "bucket/in.txt").write_text("in")
    store.mkdir()
    env = {"PATH": os.defpath, "CLUSTER_SPEC": "{}"}
    argv = [sys.executable, "-I", "-c", SEES, str(tmp_path / "seen.json"), str(store)]
    launch = Launch("workerpool0-0", 0, argv, env, tmp_path, tmp_path / "log")
    replica = spawner.start(dataclasses.replace(launch, mounts=mount.mounts(gcs, (store,))))
    assert replica.wait(30) == 0, (tmp_path / "log").read_text()
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["bound"] and (gcs / "bucket/out/x.txt").read_text() == "from the replica"
    assert seen["env"] == env  # no shell between: nothing added (a shell adds PWD)
    if not mount.read_only_why:
        assert seen["store"] == "Read-only file system" and not (store / "planted").exists()
    assert not Path("/gcs/bucket").exists()  # nothing mounted for the rest of the machine


def test_a_mount_that_fails_ends_the_replica_125_saying_why(
    mount: gcs_mount.Mount, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-store"
    launch = Launch("workerpool0-0", 0, ["true"], {"PATH": os.defpath}, tmp_path, tmp_path / "log")
    mounts = Mounts(str(missing), user=mount.user)
    assert spawner.start(dataclasses.replace(launch, mounts=mounts)).wait(30) == 125
    said = (tmp_path / "log").read_text()
    assert "cannot make the replica's mounts" in said and str(missing) in said


def test_a_program_under_gcs_is_found_in_the_store(mount: gcs_mount.Mount, tmp_path: Path) -> None:
    gcs = tmp_path / "gcs"
    (gcs / "bucket").mkdir(parents=True)
    script = gcs / "bucket/run.sh"
    script.write_text("#!/bin/sh\necho ran from gcs\n")
    script.chmod(0o755)
    launch = Launch(
        "workerpool0-0", 0, ["/gcs/bucket/run.sh"], {"PATH": os.defpath}, tmp_path, tmp_path / "log"
    )
    replica = spawner.start(dataclasses.replace(launch, mounts=mount.mounts(gcs)))
    assert replica.wait(30) == 0 and (tmp_path / "log").read_text() == "ran from gcs\n"


@pytest.fixture
def shared() -> Iterator[Path]:
    with shared_folder() as folder:
        yield folder


@as_another_user
def test_a_user_other_than_root_mounts_in_a_user_namespace_of_its_own(shared: Path) -> None:
    if not os.path.isdir("/gcs"):
        pytest.skip("no /gcs mount point")
    guard = shared / "replica_guard.py"
    shutil.copy(replica_guard.__file__, guard)  # the guard is standard library only
    for folder in ("gcs", "store", "out"):  # nobody writes the log in out/
        (shared / folder).mkdir()
        (shared / folder).chmod(0o777)
    (shared / "gcs/bound").touch()
    check = (
        "id -u; test -e /gcs/bound && echo bound; "
        f"touch {shared}/store/x 2>/dev/null && echo written || echo read-only"
    )
    request = {
        "id": 1,
        "argv": ["sh", "-c", check],
        "env": {"PATH": os.defpath},
        "cwd": str(shared),
        "log": str(shared / "out/log"),
        "mounts": dataclasses.asdict(
            Mounts(str(shared / "gcs"), read_only=(str(shared / "store"),), user=True)
        ),
    }
    start = f'exec {SYSTEM_PYTHON} -I -S {guard} "$PPID"'
    proc = subprocess.Popen(
        [*NOBODY, "sh", "-c", start],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        started = json.loads(proc.stdout.readline())
        ended = json.loads(proc.stdout.readline())
    finally:
        proc.stdin.close()
        proc.wait(10)
    said = (shared / "out/log").read_text()
    if "pid" not in started or (os.waitstatus_to_exitcode(ended["status"]) == 125):
        pytest.skip(f"user namespaces are not allowed to other users here: {started} {said}")
    assert os.waitstatus_to_exitcode(ended["status"]) == 0, said
    assert said.split() == ["0", "bound", "read-only"]  # root in its namespace, nobody outside
    assert not (shared / "store/x").exists()
    assert os.stat(shared / "out/log").st_uid != 0  # the guard ran as nobody
