"""Each replica works in a fresh directory of its own, never in the stored image
(emulator/jobs/workdirs.py): on Vertex each replica is a container, its files its own, and
a restarted container starts from its image again (Kubernetes: "During a crash, kubelet
restarts the container with a clean state", https://kubernetes.io/docs/concepts/storage/volumes/).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.emulator.jobs import gcs_mount
from trainpool.emulator.jobs.workdirs import Workdir, relocate
from trainpool.images import builder, image_store
from trainpool.images.image_store_backend import StoreBackend
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(120)

# Writes ./tmp/who (as the DDP sample's ./tmp folders), waits for the others, reads it back;
# on its first start it leaves ./scratch behind and fails (exit 3: restarted).
TASK = """
import json, os, sys, time
name = os.environ["CLOUD_ML_JOB_ID"] and json.loads(os.environ["CLUSTER_SPEC"])["task"]
me = f"{name['type']}-{name['index']}"
out = sys.argv[1]
first = not os.path.exists(os.path.join(out, me + ".started"))
if first and me == "workerpool1-0":
    open(os.path.join(out, me + ".started"), "w").close()
    open("scratch", "w").write("left behind")
    sys.exit(3)
os.makedirs("tmp", exist_ok=True)
open("tmp/who", "w").write(me)
open(os.path.join(out, me + ".ready"), "w").close()
while len([f for f in os.listdir(out) if f.endswith(".ready")]) < 3:
    time.sleep(0.05)
try:
    open(os.path.join(sys.argv[2], "context", "written-by-a-job"), "w").write("x")
    store = "writable"
except OSError as err:
    store = err.strerror
json.dump({"who": open("tmp/who").read(), "cwd": os.getcwd(), "scratch": os.path.exists("scratch"),
           "files": sorted(os.listdir(".")), "store": store}, open(os.path.join(out, me), "w"))
"""
DOCKERFILE = 'FROM python:3.11\nCOPY . /app\nWORKDIR /app\nENTRYPOINT ["python", "task.py"]\n'


@pytest.fixture
def image(tmp_path: Path) -> str:
    src = tmp_path / "src"
    src.mkdir()
    (src / "task.py").write_text(TASK)
    (src / "Dockerfile").write_text(DOCKERFILE)
    request = builder.BuildRequest(source_dir=src, repository="local/workdirs", tag="latest")
    builder.build(request, StoreBackend(tmp_path / "root"), log=lambda _: None)
    return "local/workdirs:latest"


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with emulator.start(tmp_path / "root") as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        yield job_client("us-central1")


def test_replicas_of_an_image_work_apart_and_never_in_the_stored_image(
    client: Any, image: str, tmp_path: Path
) -> None:
    stored = image_store.lookup(image, tmp_path / "root")
    assert stored is not None
    out = tmp_path / "out"
    out.mkdir()
    # the stored image's folder (a path into the image's own files would be the copy's)
    container = {"image_uri": image, "args": [str(out), str(stored.context_dir.parent)]}
    pools = [
        {
            "replica_count": n,
            "machine_spec": {"machine_type": "n1-standard-4"},
            "container_spec": container,
        }
        for n in (1, 2)
    ]
    created = client.create_custom_job(
        parent=PARENT, custom_job={"display_name": "w", "job_spec": {"worker_pool_specs": pools}}
    )
    done = wait_job(client.get_custom_job, created.name, 100)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    job_dir = tmp_path.resolve() / "root/jobs" / done.name.rsplit("/", 1)[1]
    for name in ("workerpool0-0", "workerpool1-0", "workerpool1-1"):
        seen = json.loads((out / name).read_text())
        assert seen["who"] == name  # nobody else's ./tmp
        assert seen["cwd"] == str(job_dir / "work" / name)  # the image's WORKDIR, in a copy
        assert seen["files"] == ["Dockerfile", "task.py", "tmp"]
        assert not seen["scratch"]  # workerpool1-0's restart started clean
        if not gcs_mount.mount().why and not gcs_mount.mount().read_only_why:
            assert seen["store"] == "Read-only file system"
    assert sorted(p.name for p in stored.context_dir.iterdir()) == ["Dockerfile", "task.py"]


def test_a_fresh_workdir_is_a_plain_copy_of_the_context(tmp_path: Path) -> None:
    source = tmp_path / "context"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg/a.py").write_text("a")
    (source / "link").symlink_to("pkg/a.py")
    workdir = Workdir(tmp_path / "work/workerpool0-0", source)
    workdir.fresh()
    (workdir.root / "pkg/a.py").write_text("changed")
    (workdir.root / "new").write_text("n")
    workdir.fresh()
    assert (source / "pkg/a.py").read_text() == "a"
    assert sorted(p.name for p in workdir.root.iterdir()) == ["link", "pkg"]
    assert (workdir.root / "link").is_symlink()
    assert (workdir.root / "pkg/a.py").stat().st_ino != (source / "pkg/a.py").stat().st_ino
    empty = Workdir(tmp_path / "work/workerpool1-0")
    empty.fresh()
    assert list(empty.root.iterdir()) == []


def test_image_paths_move_to_the_replicas_copy() -> None:
    old, new = Path("/r/images/d/context"), Path("/r/jobs/1/work/workerpool0-0")
    assert relocate("/r/images/d/context/app", old, new) == f"{new}/app"
    assert relocate("/r/images/d/venv/bin:/r/images/d/context/bin:/usr/bin", old, new) == (
        f"/r/images/d/venv/bin:{new}/bin:/usr/bin"
    )
    assert relocate("/r/images/d/contextual", old, new) == "/r/images/d/contextual"
    assert relocate("--lr=0.1", old, new) == "--lr=0.1"
