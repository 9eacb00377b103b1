"""Replicas as real local processes: roles, environment, failure, cancel, timeout, faults."""

from __future__ import annotations

import json
import os
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.jobs import wait_job
from fixtures.processes import alive
from fixtures.runtime import vendored_runtime
from fixtures.stand_ins import share_stand_ins
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(90)

REDUCER = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"

REPLICA = """
import argparse, json, os, subprocess, sys, time
parser = argparse.ArgumentParser()
parser.add_argument("--out")
parser.add_argument("--sleep", type=float, default=0.0)
parser.add_argument("--exit", type=int, default=0)
parser.add_argument("--wait-for-all", action="store_true")
args = parser.parse_args()
spec = json.loads(os.environ["CLUSTER_SPEC"])
task = spec["task"]
name = f"{task['type']}-{task['index']}"
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
keys = ("CLUSTER_SPEC", "TF_CONFIG", "RANK", "WORLD_SIZE", "TRAINPOOL_GCS_ROOT", "AIP_MODEL_DIR")
record = {"pids": [os.getpid(), child.pid], "env": {k: os.environ.get(k) for k in keys}}
with open(os.path.join(args.out, name + ".json"), "w") as handle:
    json.dump(record, handle)
print(f"{name} started", flush=True)
if args.wait_for_all:  # the primary's end stops parameter servers: let every replica record first
    names = [f"{pool}-{i}" for pool, hosts in spec["cluster"].items() for i in range(len(hosts))]
    deadline = time.time() + 30
    while time.time() < deadline and not all(
        os.path.exists(os.path.join(args.out, n + ".json")) for n in names
    ):
        time.sleep(0.05)
time.sleep(args.sleep)
print(f"{name} exiting with {args.exit}", flush=True)
child.kill()
sys.exit(args.exit)
"""


PYTORCH_IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-xla.2-4.py310:latest"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "replica.py").write_text(REPLICA)
    (tmp_path / "out").mkdir()
    return tmp_path / "root"


@pytest.fixture
def client(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with emulator.start(root) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        yield job_client("us-central1")


def pool(root: Path, count: int, *args: str, gpu: bool = False) -> dict[str, Any]:
    script = root.parent / "replica.py"
    command = [sys.executable, str(script), f"--out={root.parent / 'out'}", *args]
    machine: dict[str, Any] = {"machine_type": "n1-standard-4"}
    if gpu:
        machine.update(accelerator_type="NVIDIA_TESLA_T4", accelerator_count=1)
    return {
        "replica_count": count,
        "machine_spec": machine,
        "container_spec": {"image_uri": "local/none", "command": command},
    }


def create(client: Any, pools: list[dict[str, Any]], **spec: Any) -> Any:
    job = {"display_name": "job", "job_spec": {"worker_pool_specs": pools, **spec}}
    return client.create_custom_job(parent=PARENT, custom_job=job)


def wait(client: Any, name: str, timeout: float = 30.0, logs: Path | None = None) -> Any:
    return wait_job(client.get_custom_job, name, timeout, logs=logs)


def records(root: Path, names: list[str], timeout: float = 20.0) -> dict[str, Any]:
    """Each replica's record, waiting until every named replica has written it."""
    out = root.parent / "out"
    deadline = time.monotonic() + timeout
    while not all((out / f"{n}.json").exists() for n in names):
        assert time.monotonic() < deadline, sorted(os.listdir(out))
        time.sleep(0.05)
    time.sleep(0.05)
    return {n: json.loads((out / f"{n}.json").read_text()) for n in names}


def all_gone(recs: dict[str, Any], timeout: float = 5.0) -> bool:
    pids = [pid for rec in recs.values() for pid in rec["pids"]]
    deadline = time.monotonic() + timeout
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def job_dir(root: Path, job: Any) -> Path:
    return root / "jobs" / job.name.rsplit("/", 1)[-1]


def test_parameter_servers_and_evaluators(client: Any, root: Path) -> None:
    pools = [
        pool(root, 1, "--sleep=0.5", "--wait-for-all"),
        pool(root, 2, "--sleep=0.5"),
        pool(root, 2, "--sleep=600"),
        pool(root, 1, "--sleep=1"),
    ]
    job = create(client, pools, base_output_directory={"output_uri_prefix": "gs://bkt/run"})
    done = wait(client, job.name)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    names = ["workerpool0-0", "workerpool1-0", "workerpool1-1", "workerpool2-0", "workerpool2-1"]
    recs = records(root, [*names, "workerpool3-0"])
    assert all_gone(recs)
    cluster = json.loads(recs["workerpool1-1"]["env"]["CLUSTER_SPEC"])["cluster"]
    assert {k: len(v) for k, v in cluster.items()} == {
        "workerpool0": 1,
        "workerpool1": 2,
        "workerpool2": 2,
        "workerpool3": 1,
    }
    hosts = [h for hs in cluster.values() for h in hs]
    assert len(set(hosts)) == 6 and all(h.startswith("127.0.0.1:") for h in hosts)
    tf_types = {n: json.loads(r["env"]["TF_CONFIG"])["task"]["type"] for n, r in recs.items()}
    assert tf_types == {
        "workerpool0-0": "chief",
        "workerpool1-0": "worker",
        "workerpool1-1": "worker",
        "workerpool2-0": "ps",
        "workerpool2-1": "ps",
        "workerpool3-0": "evaluator",
    }
    env = recs["workerpool0-0"]["env"]
    assert env["TRAINPOOL_GCS_ROOT"] == str(root.resolve() / "gcs")
    assert env["AIP_MODEL_DIR"] == "gs://bkt/run/model/"
    logs = sorted(p.name for p in job_dir(root, job).glob("*.log"))
    assert logs == ["job.log"] + [f"{n}.log" for n in sorted(recs)]
    assert "workerpool2-1 started" in (job_dir(root, job) / "workerpool2-1.log").read_text()


def test_reduction_server_pool_is_in_cluster_spec_but_not_started(client: Any, root: Path) -> None:
    reducers = {
        "replica_count": 2,
        "machine_spec": {"machine_type": "n1-highcpu-16"},
        "container_spec": {"image_uri": REDUCER},
    }
    job = create(client, [pool(root, 1, gpu=True), pool(root, 1, gpu=True), reducers])
    done = wait(client, job.name)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    recs = records(root, ["workerpool0-0", "workerpool1-0"])
    cluster = json.loads(recs["workerpool0-0"]["env"]["CLUSTER_SPEC"])["cluster"]
    assert len(cluster["workerpool2"]) == 2
    assert not (job_dir(root, job) / "workerpool2-0.log").exists()
    assert "workerpool2 is a Reduction Server" in (job_dir(root, job) / "job.log").read_text()


def test_a_permanent_exit_fails_the_job_and_stops_everything(client: Any, root: Path) -> None:
    # exit 1 is one of the "common errors": permanent, the whole job is shut down (failures.py)
    job = create(client, [pool(root, 1, "--sleep=600"), pool(root, 2, "--sleep=0.5", "--exit=1")])
    recs = records(root, ["workerpool0-0", "workerpool1-0", "workerpool1-1"])
    crashed_by = time.monotonic() + 0.5
    done = wait(client, job.name)
    assert time.monotonic() - crashed_by < 60  # the chief sleeps 600 s: it was terminated
    assert done.state == JobState.JOB_STATE_FAILED
    assert done.error.code == 3
    first_line = done.error.message.splitlines()[0]
    assert first_line in {
        f"The replica workerpool1-{i} exited with a non-zero status of 1. "
        "Termination reason: Error."
        for i in (0, 1)
    }
    assert "exiting with 1" in done.error.message
    assert "is permanent" in done.error.message
    assert all_gone(recs)


def test_cancel_stops_every_process(client: Any, root: Path) -> None:
    job = create(client, [pool(root, 1, "--sleep=600"), pool(root, 2, "--sleep=600")])
    recs = records(root, ["workerpool0-0", "workerpool1-0", "workerpool1-1"])
    assert client.get_custom_job(name=job.name).state == JobState.JOB_STATE_RUNNING
    asked = time.monotonic()
    client.cancel_custom_job(name=job.name)
    done = wait(client, job.name, timeout=5)
    assert done.state == JobState.JOB_STATE_CANCELLED
    assert all_gone(recs, timeout=max(0.1, 5 - (time.monotonic() - asked)))


def test_timeout_fails_the_job(client: Any, root: Path) -> None:
    job = create(client, [pool(root, 1, "--sleep=600")], scheduling={"timeout": "1s"})
    done = wait(client, job.name)
    assert (done.state, done.error.code) == (JobState.JOB_STATE_FAILED, 4)
    assert done.error.message == "The job exceeded its timeout of 1s."
    assert all_gone(records(root, ["workerpool0-0"]))


def test_image_neither_local_nor_with_command_says_how_to_fix(client: Any, root: Path) -> None:
    bare = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": "us-docker.pkg.dev/p/r/trainer:1"},
    }
    done = wait(client, create(client, [bare]).name)
    assert done.state == JobState.JOB_STATE_FAILED
    assert done.error.message == (
        "workerPoolSpecs[0].containerSpec.imageUri: 'us-docker.pkg.dev/p/r/trainer:1' is not in "
        "the local image store and the pool has no command to run on the host; make it available "
        "locally with `trainpool build-image DIR --local` or `gcloud builds submit --tag "
        "us-docker.pkg.dev/p/r/trainer:1 DIR` under `trainpool exec` (or give "
        "containerSpec.command)"
    )


def write_wheel(path: Path) -> None:
    """A minimal pure-Python wheel with module ``tinytrainer.task``."""
    files = {
        "tinytrainer/__init__.py": "",
        "tinytrainer/task.py": (
            "import os, sys\n"
            "open(os.path.join(sys.argv[1], 'ran.txt'), 'w').write(' '.join(sys.argv[2:]))\n"
        ),
        "tinytrainer-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinytrainer\n"
        "Version: 0.1\n",
        "tinytrainer-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + "tinytrainer-0.1.dist-info/RECORD,,\n"
    path.parent.mkdir(parents=True)
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in {**files, "tinytrainer-0.1.dist-info/RECORD": record}.items():
            wheel.writestr(name, text)


def test_python_package_from_local_gcs_is_installed_per_job(client: Any, root: Path) -> None:
    write_wheel(root / "gcs/bucket/pkgs/tinytrainer-0.1-py3-none-any.whl")
    out = root.parent / "out"
    package = {
        "executor_image_uri": "python",
        "package_uris": ["gs://bucket/pkgs/tinytrainer-0.1-py3-none-any.whl"],
        "python_module": "tinytrainer.task",
        "args": [str(out), "--lr=0.1"],
    }
    spec = {"replica_count": 1, "machine_spec": {"machine_type": "n1-standard-4"}}
    done = wait(client, create(client, [{**spec, "python_package_spec": package}]).name)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    assert (out / "ran.txt").read_text() == "--lr=0.1"
    missing = {**package, "package_uris": ["gs://bucket/pkgs/nope.whl"]}
    failed = wait(client, create(client, [{**spec, "python_package_spec": missing}]).name)
    assert failed.state == JobState.JOB_STATE_FAILED
    assert failed.error.message.startswith(
        "pythonPackageSpec.packageUris: 'gs://bucket/pkgs/nope.whl' not found at "
        f"{root.resolve()}/gcs/bucket/pkgs/nope.whl"
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_pytorch_ddp_example_on_three_replicas(client: Any, root: Path) -> None:
    # on a Vertex PyTorch image (its stand-in has torch), with trainpool's runtime shipped
    # beside the trainer; an executor image the emulator does not know runs in this
    # machine's clean Python, which has neither
    share_stand_ins(root)
    example = Path(__file__).resolve().parents[1] / "examples" / "pytorch_ddp"
    runtime = vendored_runtime(root.parent / "runtime")
    package = {
        "package_uris": [str(example), str(runtime)],
        "python_module": "trainer.task",
        "args": ["--epochs=1"],
    }
    pools = [
        {
            "replica_count": n,
            "machine_spec": {"machine_type": "n1-standard-4"},
            "python_package_spec": {"executor_image_uri": PYTORCH_IMAGE, **package},
        }
        for n in (1, 2)
    ]
    job = create(client, pools, base_output_directory={"output_uri_prefix": "gs://bkt/ddp"})
    done = wait(client, job.name, timeout=280, logs=job_dir(root, job))
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    assert (root / "gcs/bkt/ddp/model/model.pt").is_file()
    for rank, name in enumerate(["workerpool0-0", "workerpool1-0", "workerpool1-1"]):
        log = (job_dir(root, job) / f"{name}.log").read_text()
        assert f"{name} rank {rank}/3 epoch 1" in log
