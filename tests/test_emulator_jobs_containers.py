"""Replicas as containers of their images, on a real engine (``jobs/containers.py``).

What Vertex does, with its source: a replica is a container of its pool's image; the
image's ENTRYPOINT, CMD, WORKDIR, ENV and USER hold, ``containerSpec.command`` overrides
the ENTRYPOINT and ``args`` the CMD (``ContainerSpec``, google/cloud/aiplatform/v1/
custom_job.proto; Google's "Configure container settings for custom training"); the
pool's ``env`` is added to the image's; ``CLUSTER_SPEC`` names every replica's address
(Google's "Distributed training" page); exit 1 fails the job at once; a cancelled job's
replicas get SIGTERM first. Skipped, saying why, where no engine answers.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import tarfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.disks import fill
from fixtures.engine import SecondEngine, build, ours
from fixtures.host_image import host_image
from fixtures.jobs import wait_job
from fixtures.runtime import vendored_runtime
from fixtures.shell import docker_repository, exec_env, gcloud, needs_gcloud, ok
from fixtures.shell import run as shell
from fixtures.vertex import PARENT, fresh_pipeline_sdk
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.emulator.jobs import containers
from trainpool.emulator.jobs.container_specs import ContainerLaunch
from trainpool.emulator.jobs.containers import ContainerEngine
from trainpool.emulator.jobs.failure_rules import exit_message
from trainpool.emulator.jobs.processes import Launch
from trainpool.emulator.stand_ins import debian_bases
from trainpool.images import image_store
from trainpool.images.service import build_image
from trainpool.vertex.clients import job_client

PUBLIC_BASE = "python:3.11-slim"
TASK = r"""
import json, os, pathlib, signal, socket, sys, time

spec = json.loads(os.environ["CLUSTER_SPEC"])
task = spec["task"]
name = f"{task['type']}-{task['index']}"
mode = sys.argv[1] if len(sys.argv) > 1 else "none"
if mode == "report":
    built = pathlib.Path("/opt/built.txt").read_text().strip()
    keys = ["GREETING", "FROM_POOL", "CLOUD_ML_JOB_ID", "AIP_MODEL_DIR", "HOME", "PATH"]
    record = {"argv": sys.argv, "cwd": os.getcwd(), "uid": os.getuid(), "built": built,
              "task": task, "env": {k: os.environ.get(k) for k in keys},
              "gcs": os.path.isdir("/gcs")}
    print("RECORD " + json.dumps(record), flush=True)
    print("to stderr", file=sys.stderr, flush=True)
elif mode == "ring":
    cluster = spec["cluster"]
    chief = cluster["workerpool0"][0]
    host, port = chief.rsplit(":", 1)
    if task["type"] == "workerpool0":
        server = socket.create_server((host, int(port)))
        server.settimeout(120)
        seen = []
        while len(seen) < len(cluster["workerpool1"]):
            conn, _ = server.accept()
            seen.append(conn.recv(100).decode())
            conn.close()
        out = pathlib.Path("/gcs/bkt")
        out.mkdir(parents=True, exist_ok=True)
        (out / "ring.json").write_text(json.dumps({"chief": chief, "seen": sorted(seen)}))
    else:
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection((host, int(port)), timeout=5) as conn:
                    conn.sendall(name.encode())
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
elif mode == "sleep":
    def stop(*_):
        out = pathlib.Path("/gcs/bkt/term")
        out.mkdir(parents=True, exist_ok=True)
        (out / name).write_text("SIGTERM")
        sys.exit(143)
    signal.signal(signal.SIGTERM, stop)
    print("sleeping", flush=True)
    time.sleep(600)
elif mode == "api":
    # Google's URL for this job, through the HTTPS proxy the environment names, trusting
    # the CA bundle it names, with the token gcloud would send (gcloud auth print-access-token)
    import urllib.request
    job = os.environ["CLOUD_ML_JOB_ID"]
    url = ("https://us-central1-aiplatform.googleapis.com/v1/projects/demo/locations/"
           f"us-central1/customJobs/{job}")
    token = open(os.environ["CLOUDSDK_AUTH_ACCESS_TOKEN_FILE"]).read().strip()
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        body = json.load(answer)
    print("API " + json.dumps({"state": body["state"], "name": body["displayName"]}), flush=True)
elif mode == "trial":
    # what cloudml-hypertune writes, and the model where Vertex's AIP_MODEL_DIR says, by /gcs
    x = float([a for a in sys.argv if a.startswith("--x=")][0][4:])
    trial = os.environ["CLOUD_ML_TRIAL_ID"]
    with open(os.environ["CLOUD_ML_HP_METRIC_FILE"], "a") as metrics:
        metrics.write(json.dumps({"timestamp": time.time(), "trial": trial, "score": str(x * 10),
                                  "global_step": "1", "checkpoint_path": ""}) + "\n")
    model_dir = "/gcs/" + os.environ["AIP_MODEL_DIR"][len("gs://"):]
    os.makedirs(model_dir, exist_ok=True)
    pathlib.Path(model_dir, "trial.json").write_text(json.dumps({"trial": trial, "x": x}))
elif mode == "flaky":
    # fails its first start with 5 (not one of the permanent codes: the replica is restarted)
    starts = pathlib.Path("/gcs/bkt/starts") / name
    starts.parent.mkdir(parents=True, exist_ok=True)
    with open(starts, "a") as out:
        out.write(f"{socket.gethostname()}\n")
    if len(starts.read_text().split()) == 1:
        sys.exit(5)
elif mode == "exit":
    print("exiting with", sys.argv[2], flush=True)
    sys.exit(int(sys.argv[2]))
"""


def dockerfile(base: str, user: str = "") -> str:
    lines = [
        f"FROM {base}",
        "RUN echo built-by-a-run-step > /opt/built.txt",
        "WORKDIR /opt/trainer",
        "COPY task.py /opt/trainer/task.py",
        "ENV GREETING=from-the-image",
        *([f"USER {user}"] if user else []),
        'ENTRYPOINT ["python", "task.py"]',
        'CMD ["report", "--from-cmd"]',
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def image(engine: ContainerEngine, python_base: str) -> str:
    tag = "trainpool-test/containers:report"
    build(engine, tag, {"Dockerfile": dockerfile(python_base, user="4321"), "task.py": TASK})
    return tag


@pytest.fixture(scope="module")
def root_image(engine: ContainerEngine, python_base: str) -> str:
    tag = "trainpool-test/containers:root"
    build(engine, tag, {"Dockerfile": dockerfile(python_base), "task.py": TASK})
    return tag


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


@pytest.fixture
def client(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with emulator.start(root) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        yield job_client("us-central1")


def pool(count: int, image_uri: str, **container: Any) -> dict[str, Any]:
    return {
        "replica_count": count,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": image_uri, **container},
    }


def create(client: Any, pools: list[dict[str, Any]], **spec: Any) -> Any:
    job = {"display_name": "job", "job_spec": {"worker_pool_specs": pools, **spec}}
    return client.create_custom_job(parent=PARENT, custom_job=job)


def grid_sweep(client: Any, image_uri: str, output: str) -> Any:
    """A 2-trial GRID sweep over x in [1, 2] of ``image_uri``'s "trial" mode, ended."""
    sweep = {
        "display_name": "sweep",
        "max_trial_count": 2,
        "parallel_trial_count": 2,
        "study_spec": {
            "metrics": [{"metric_id": "score", "goal": "MAXIMIZE"}],
            "parameters": [{"parameter_id": "x", "discrete_value_spec": {"values": [1, 2]}}],
            "algorithm": "GRID_SEARCH",
        },
        "trial_job_spec": {
            "worker_pool_specs": [pool(1, image_uri, args=["trial"])],
            "base_output_directory": {"output_uri_prefix": output},
        },
    }
    made = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=sweep)
    return wait_job(client.get_hyperparameter_tuning_job, made.name, 300)


def job_dir(root: Path, job: Any) -> Path:
    return root / "jobs" / job.name.rsplit("/", 1)[-1]


def wait(client: Any, root: Path, job: Any, timeout: float = 120.0) -> Any:
    return wait_job(client.get_custom_job, job.name, timeout, logs=job_dir(root, job))


def entries(root: Path, job: Any, name: str) -> list[dict[str, Any]]:
    """Replica ``name``'s log entries: a line of one stream each (its log mixes the two)."""
    path = job_dir(root, job) / "entries" / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def records(root: Path, job: Any, name: str) -> dict[str, Any]:
    found = [e["m"] for e in entries(root, job, name) if e["m"].startswith("RECORD ")]
    assert len(found) == 1, entries(root, job, name)
    return dict(json.loads(found[0][len("RECORD ") :]))


@pytest.mark.timeout(600)
def test_a_pool_runs_as_containers_of_its_image_with_vertexs_overrides(
    client: Any,
    root: Path,
    engine: ContainerEngine,
    image: str,
) -> None:
    pools = [
        pool(1, image),  # the image's ENTRYPOINT and CMD
        pool(2, image, args=["report", "--from-args"], env=[{"name": "FROM_POOL", "value": "1"}]),
        {},
        pool(1, image, command=["python", "task.py"]),  # command drops the CMD too
    ]
    job = create(client, pools, base_output_directory={"output_uri_prefix": "gs://bkt/out"})
    done = wait(client, root, job)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    job_id = job.name.rsplit("/", 1)[-1]
    chief = records(root, job, "workerpool0-0")
    assert chief["argv"] == ["task.py", "report", "--from-cmd"]
    assert chief["cwd"] == "/opt/trainer" and chief["uid"] == 4321  # WORKDIR, USER
    assert chief["built"] == "built-by-a-run-step"  # the RUN step ran
    assert chief["env"]["GREETING"] == "from-the-image" and chief["env"]["FROM_POOL"] is None
    assert chief["env"]["CLOUD_ML_JOB_ID"] == job_id
    assert chief["env"]["AIP_MODEL_DIR"] == "gs://bkt/out/model/"
    assert chief["env"]["PATH"].startswith("/usr/local/bin:")  # the image's, not this machine's
    assert chief["task"] == {"type": "workerpool0", "index": 0}
    assert chief["gcs"] is True
    for index in (0, 1):
        worker = records(root, job, f"workerpool1-{index}")
        assert worker["argv"] == ["task.py", "report", "--from-args"]
        assert worker["env"]["FROM_POOL"] == "1"
        assert worker["task"] == {"type": "workerpool1", "index": index}
    evaluator = (job_dir(root, job) / "workerpool3-0.log").read_text()
    assert "RECORD" not in evaluator  # `python task.py` alone: no CMD, mode "none"
    log = (job_dir(root, job) / "job.log").read_text()
    digest = engine.image(image)
    assert digest is not None
    assert f"workerpool0: each replica is a container of {image} ({digest.digest}) on " in log
    assert engine.describe in log
    streams = [(e["s"], e["m"][:6]) for e in entries(root, job, "workerpool0-0")]
    assert sorted(streams) == [("e", "to std"), ("o", "RECORD")]
    assert ours(engine, root) == []  # each container removed once it ended


@pytest.mark.timeout(600)
def test_replicas_reach_one_another_at_their_cluster_spec_addresses(
    client: Any,
    root: Path,
    engine: ContainerEngine,
    root_image: str,
) -> None:
    pools = [pool(1, root_image, args=["ring"]), pool(2, root_image, args=["ring"])]
    job = create(client, pools)
    done = wait(client, root, job)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    ring = json.loads((root / "gcs" / "bkt" / "ring.json").read_text())  # /gcs is the store
    assert ring["seen"] == ["workerpool1-0", "workerpool1-1"]
    assert ring["chief"].startswith("127.0.0.1:")


@pytest.mark.timeout(600)
def test_exit_1_fails_the_job_at_once_and_leaves_no_container(
    client: Any,
    root: Path,
    engine: ContainerEngine,
    root_image: str,
) -> None:
    pools = [pool(1, root_image, args=["sleep"]), pool(1, root_image, args=["exit", "1"])]
    job = create(client, pools)
    done = wait(client, root, job)
    assert done.state == JobState.JOB_STATE_FAILED
    assert done.error.message.splitlines()[0] == (
        "The replica workerpool1-0 exited with a non-zero status of 1. Termination reason: Error."
    )
    assert ours(engine, root) == []


@pytest.mark.timeout(600)
def test_cancel_sends_sigterm_then_removes_every_container(
    client: Any,
    root: Path,
    engine: ContainerEngine,
    root_image: str,
) -> None:
    job = create(client, [pool(1, root_image, args=["sleep"]), pool(2, root_image, args=["sleep"])])
    names = ["workerpool0-0", "workerpool1-0", "workerpool1-1"]
    deadline = time.monotonic() + 120
    logs = [job_dir(root, job) / f"{n}.log" for n in names]
    while not all(p.exists() and "sleeping" in p.read_text() for p in logs):
        assert time.monotonic() < deadline, [p.read_text() for p in logs if p.exists()]
        time.sleep(0.1)
    assert len(ours(engine, root)) == 3
    client.cancel_custom_job(name=job.name)
    done = wait(client, root, job)
    assert done.state == JobState.JOB_STATE_CANCELLED
    term = root / "gcs" / "bkt" / "term"
    assert sorted(os.listdir(term)) == names  # each got SIGTERM before any SIGKILL
    assert ours(engine, root) == []


@pytest.mark.timeout(300)
def test_an_earlier_emulators_containers_are_removed_at_start_and_no_one_elses(
    tmp_path: Path,
    engine: ContainerEngine,
    root_image: str,
) -> None:
    root, other = tmp_path / "root", tmp_path / "other"
    run = engine.client.containers.run
    left = run(
        root_image,
        entrypoint=["sleep", "600"],
        detach=True,
        labels={containers.STORE_LABEL: containers.store_id(root)},
    )
    theirs = run(
        root_image,
        entrypoint=["sleep", "600"],
        detach=True,
        labels={containers.STORE_LABEL: containers.store_id(other)},
    )
    try:
        with emulator.start(root):
            assert ours(engine, root) == []
            theirs.reload()
            assert theirs.status == "running"
    finally:
        for container in (left, theirs):
            try:
                container.remove(force=True)
            except Exception:  # noqa: BLE001 - already removed
                pass


def test_without_an_engine_replicas_are_processes_and_the_job_log_says_why(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(containers.SWITCH_ENV, "off")
    with emulator.start(root) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        command = ["python3", "-c", "print('a process')"]
        job = create(client, [pool(1, "trainpool-test/containers:root", command=command)])
        done = wait(client, root, job)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    log = (job_dir(root, job) / "job.log").read_text()
    assert (
        "replicas run as processes of this machine that imitate their images "
        f"({containers.SWITCH_ENV}=off)"
    ) in log
    assert "a process" in (job_dir(root, job) / "workerpool0-0.log").read_text()


@pytest.mark.timeout(600)
def test_inside_a_container_googles_url_reaches_the_emulator(
    client: Any, root: Path, root_image: str
) -> None:
    job = create(client, [pool(1, root_image, args=["api"])])
    done = wait(client, root, job)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    said = [e["m"] for e in entries(root, job, "workerpool0-0") if e["m"].startswith("API ")]
    assert [json.loads(m[4:]) for m in said] == [{"state": "JOB_STATE_RUNNING", "name": "job"}]


@needs_gcloud
@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker command to build with")
@pytest.mark.timeout(600)
def test_docker_build_push_then_gcloud_custom_jobs_create_runs_a_chief_and_two_workers(
    emu: emulator.Emulator, engine: ContainerEngine, python_base: str, tmp_path: Path
) -> None:
    # as Google's notebooks type it under trainpool exec: create the repository, docker build
    # -t, docker push, list it, then gcloud ai custom-jobs create naming the image
    trainer = tmp_path / "trainer"
    trainer.mkdir()
    (trainer / "Dockerfile").write_text(dockerfile(python_base))
    (trainer / "task.py").write_text(TASK)
    image = "us-central1-docker.pkg.dev/demo/trainers/ring:1"
    docker_repository(emu, "trainers")
    ok(shell(emu, ["docker", "build", "-t", image, str(trainer)], timeout=300))
    pushed = ok(shell(emu, ["docker", "push", image]))
    image_id = engine.client.images.get(image).id
    # docker's own lines: the repository, then "TAG: digest: DIGEST size: N"
    assert "The push refers to repository [us-central1-docker.pkg.dev/demo/trainers/ring]" in pushed
    assert f"1: digest: {image_id} size: " in pushed
    listed = ok(
        gcloud(
            emu,
            "artifacts",
            "docker",
            "images",
            "list",
            "us-central1-docker.pkg.dev/demo/trainers",
            "--include-tags",
            "--format=json",
        )
    )
    assert [(i["package"], i["version"], i["tags"]) for i in json.loads(listed)] == [
        ("us-central1-docker.pkg.dev/demo/trainers/ring", image_id, ["1"])
    ]
    versions = ok(
        gcloud(
            emu,
            "artifacts",
            "docker",
            "images",
            "list",
            "us-central1-docker.pkg.dev/demo/trainers/ring",
            "--include-tags",
            "--format=json",
        )
    )
    assert [(i["version"], i["tags"]) for i in json.loads(versions)] == [(image_id, ["1"])]
    spec = "machine-type=n1-standard-4,replica-count={n},container-image-uri=" + image
    made = ok(
        gcloud(
            emu,
            "ai",
            "custom-jobs",
            "create",
            "--region=us-central1",
            "--display-name=ring",
            "--worker-pool-spec=" + spec.format(n=1),
            "--worker-pool-spec=" + spec.format(n=2),
            "--args=ring",
            "--format=value(name)",
        )
    )
    name = made.strip().splitlines()[-1]
    client = job_client("us-central1")
    job = client.get_custom_job(name=name)
    done = wait(client, emu.root, job)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    ring = json.loads((emu.root / "gcs" / "bkt" / "ring.json").read_text())
    assert ring["seen"] == ["workerpool1-0", "workerpool1-1"]
    log = (job_dir(emu.root, job) / "job.log").read_text()
    assert f"each replica is a container of {image}" in log
    assert "was not pushed" not in log
    assert ours(engine, emu.root) == []


LOCAL_PACKAGE_TASK = """
import json, os, sys
task = json.loads(os.environ["CLUSTER_SPEC"])["task"]
print("TRAINED", os.environ["CLOUD_ML_JOB_ID"], task["type"], sys.argv[1:], flush=True)
"""


@needs_gcloud
@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker command to build with")
@pytest.mark.timeout(600)
def test_gcloud_custom_jobs_create_local_package_path_builds_pushes_and_runs_the_image(
    emu: emulator.Emulator, engine: ContainerEngine, python_base: str, tmp_path: Path
) -> None:
    # gcloud ai custom-jobs create --local-package-path, as typed: gcloud writes a Dockerfile
    # FROM the executor image (on docker build's standard input), builds it with docker, docker
    # pushes it to gcr.io/PROJECT/cloudai-autogenerated/..., then creates the job naming it
    # (google-cloud-cli 528: command_lib/ai/docker/build.py, custom_jobs/local_util.py). The
    # executor python:3.11-slim cannot be pulled here: docker build under trainpool exec gets
    # its offline stand-in, and says so
    if engine.image(PUBLIC_BASE) is not None and engine.image(python_base) is not None:
        engine.client.images.remove(PUBLIC_BASE)  # the tag only: the stand-in keeps the image
    package = tmp_path / "package"
    (package / "trainer").mkdir(parents=True)
    (package / "trainer" / "__init__.py").write_text("")
    (package / "trainer" / "task.py").write_text(LOCAL_PACKAGE_TASK)
    spec = (
        "machine-type=n1-standard-4,replica-count=1,executor-image-uri=python:3.11-slim,"
        f"local-package-path={package},python-module=trainer.task"
    )
    made = gcloud(
        emu,
        "ai",
        "custom-jobs",
        "create",
        "--region=us-central1",
        "--display-name=local-package",
        "--worker-pool-spec=" + spec,
        "--args=--epochs=2",
        timeout=300,
    )
    assert made.returncode == 0, made.stderr[-6000:] + made.stdout[-3000:]
    printed = made.stdout + made.stderr
    assert "trainpool exec: FROM python:3.11-slim: cannot be pulled here" in printed
    assert "The push refers to repository [gcr.io/demo/cloudai-autogenerated/" in printed
    client = job_client("us-central1")
    (job,) = client.list_custom_jobs(parent=PARENT)
    done = wait(client, emu.root, job)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    image_uri = done.job_spec.worker_pool_specs[0].container_spec.image_uri
    assert image_uri.startswith("gcr.io/demo/cloudai-autogenerated/")
    log = (job_dir(emu.root, job) / "workerpool0-0.log").read_text()
    assert f"TRAINED {job.name.rsplit('/', 1)[1]} workerpool0 ['--epochs=2']" in log
    assert "was not pushed" not in (job_dir(emu.root, job) / "job.log").read_text()
    engine.client.images.remove(image_uri)


@needs_gcloud
@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker command to push with")
@pytest.mark.timeout(300)
def test_a_push_artifact_registry_refuses_is_refused_and_an_unpushed_image_is_said(
    emu: emulator.Emulator, engine: ContainerEngine, root_image: str, python_base: str
) -> None:
    # Artifact Registry refuses a push to a repository never created ('name unknown:
    # Repository "R" not found'); docker refuses to push what the engine does not have. A job
    # naming an Artifact Registry image the engine has but nobody pushed runs, and its log
    # says that on Vertex AI the pull would fail
    unmade = "us-central1-docker.pkg.dev/demo/unmade/report:1"
    engine.client.images.get(root_image).tag("us-central1-docker.pkg.dev/demo/unmade/report", "1")
    refused = shell(emu, ["docker", "push", unmade])
    assert refused.returncode == 1
    assert 'name unknown: Repository "unmade" not found' in refused.stderr
    absent = shell(emu, ["docker", "push", "us-central1-docker.pkg.dev/demo/unmade/absent:1"])
    assert absent.returncode == 1
    assert "An image does not exist locally with the tag" in absent.stderr
    # gcr.io: its repository is made on the first push, in the us multi-region
    engine.client.images.get(root_image).tag("gcr.io/demo/report", "latest")
    ok(shell(emu, ["docker", "push", "gcr.io/demo/report"]))
    repositories = ok(gcloud(emu, "artifacts", "repositories", "list", "--location=us"))
    assert "gcr.io" in repositories
    # docker pull answers what was pushed, as a pull from the registry does, not what the
    # engine holds under the name: never pushed is "manifest unknown"; a tag moved in the
    # engine since the push is moved back ("Downloaded newer image")
    unpulled = shell(emu, ["docker", "pull", unmade])
    assert unpulled.returncode == 1 and "manifest unknown" in unpulled.stderr
    assert "Image is up to date" in ok(shell(emu, ["docker", "pull", "gcr.io/demo/report"]))
    engine.client.images.get(python_base).tag("gcr.io/demo/report", "latest")
    assert "Downloaded newer image" in ok(shell(emu, ["docker", "pull", "gcr.io/demo/report"]))
    pushed_id = engine.client.images.get(root_image).id
    assert engine.client.images.get("gcr.io/demo/report:latest").id == pushed_id
    # gcloud auth configure-docker, as notebooks run it first: docker's config names gcloud
    ok(gcloud(emu, "auth", "configure-docker", "us-central1-docker.pkg.dev"))
    home = Path(exec_env(emu)["HOME"])
    helpers = json.loads((home / ".docker" / "config.json").read_text())["credHelpers"]
    assert helpers["us-central1-docker.pkg.dev"] == "gcloud"
    # everything else goes to the real docker, its exit status kept
    assert shell(emu, ["docker", "image", "inspect", unmade]).returncode == 0
    assert shell(emu, ["docker", "image", "inspect", "no-such/image:0"]).returncode == 1
    client = job_client("us-central1")
    job = create(client, [pool(1, unmade, args=["exit", "0"]), pool(1, unmade, args=["exit", "0"])])
    done = wait(client, emu.root, job)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    log = (job_dir(emu.root, job) / "job.log").read_text()
    warning = f"WARNING: {unmade} was not pushed to the emulator's Artifact Registry"
    assert log.count(warning) == 1  # said once for the job, not once per pool
    engine.client.images.remove(unmade)
    engine.client.images.remove("gcr.io/demo/report:latest")


@pytest.mark.timeout(300)
def test_a_container_killed_for_memory_ends_137_and_says_so(
    tmp_path: Path, engine: ContainerEngine, root_image: str
) -> None:
    # a machine type's memory is the container's limit; 64 MiB here, so that 512 MiB is over
    image = engine.image(root_image)
    assert image is not None
    grow = "x = bytearray(512 * 2**20); print('not killed')"
    launch = Launch(
        "workerpool0-0",
        0,
        ["python3", "-c", grow],
        {},
        tmp_path,
        tmp_path / "workerpool0-0.log",
        entries=tmp_path / "entries.jsonl",
        container=ContainerLaunch(
            image, entrypoint=["python3", "-c", grow], command=None, memory_bytes=64 * 2**20
        ),
    )
    runner = containers.ContainerRunner(engine, tmp_path / "root")
    replica = runner.start(launch)
    assert replica.wait(120) == 137
    assert replica.out_of_memory
    log = launch.log.read_text()
    assert "not killed" not in log and "killed for memory (its limit: 0.0625 GiB)" in log
    assert exit_message("workerpool0-0", 137, replica.out_of_memory) == (
        "The replica workerpool0-0 ran out-of-memory and exited with a non-zero status of "
        "9(SIGKILL)."
    )
    assert ours(engine, tmp_path / "root") == []


@pytest.mark.timeout(600)
def test_a_sweeps_trials_run_as_containers_and_keep_their_outputs_apart(
    client: Any, root: Path, engine: ContainerEngine, root_image: str
) -> None:
    done = grid_sweep(client, root_image, "gs://bkt/sweep")
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    scores = {t.id: t.final_measurement.metrics[0].value for t in done.trials}
    assert scores == {"1": 10.0, "2": 20.0}
    for trial in ("1", "2"):  # AIP_MODEL_DIR is <base>/<trial>/model/ (Vertex's)
        written = json.loads((root / "gcs/bkt/sweep" / trial / "model/trial.json").read_text())
        assert written == {"trial": trial, "x": float(trial)}
    assert ours(engine, root) == []


NOTEBOOK_DOCKERFILE = """\
FROM python:3.11-slim
WORKDIR /
RUN echo "a RUN step ran" && python -c "print('python', 6 * 7)" > /ran.txt
COPY trainer /trainer
ENTRYPOINT ["python", "-m", "trainer.task"]
"""


@needs_gcloud
@pytest.mark.timeout(600)
def test_gcloud_builds_submit_runs_every_step_on_the_engine_and_a_sweep_runs_the_image(
    emu: emulator.Emulator, engine: ContainerEngine, python_base: str, tmp_path: Path
) -> None:
    # the shape of Google's TensorFlow hyperparameter-tuning notebook: a Dockerfile with
    # WORKDIR /, a RUN step, COPY trainer /trainer and ENTRYPOINT python -m trainer.task,
    # built with `gcloud builds submit --tag`, then run as a 2-trial sweep
    source = tmp_path / "source"
    (source / "trainer").mkdir(parents=True)
    (source / "trainer" / "__init__.py").write_text("")
    (source / "trainer" / "task.py").write_text(TASK)
    (source / "Dockerfile").write_text(NOTEBOOK_DOCKERFILE)
    image = "us-central1-docker.pkg.dev/demo/trainers/hpt:1"
    tagged = engine.image("python:3.11-slim")  # an earlier build's stand-in, tagged so
    stand_in = tagged is not None and tagged.id == engine.image(python_base).id  # type: ignore[union-attr]
    if stand_in:
        engine.client.images.remove("python:3.11-slim")  # the tag only: the stand-in stays
    said = ok(gcloud(emu, "builds", "submit", "--tag", image, str(source), timeout=500))
    assert "a RUN step ran" in said and "Step 3/5 : RUN" in said  # the build's log, streamed
    if stand_in or tagged is None:  # not where a real python:3.11-slim is there (pulled)
        assert "FROM python:3.11-slim: cannot be pulled here" in said  # said, not silent
    built = engine.client.images.get(image)
    assert built.labels.get("org.trainpool.stand-in") == "python:3.11-slim"  # from its base
    client = job_client("us-central1")
    done = grid_sweep(client, image, "gs://bkt/hpt")
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    assert sorted(t.final_measurement.metrics[0].value for t in done.trials) == [10.0, 20.0]


@needs_gcloud
@pytest.mark.timeout(600)
def test_a_failing_run_step_fails_the_build_naming_the_step_and_its_output(
    emu: emulator.Emulator, engine: ContainerEngine, python_base: str, tmp_path: Path
) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "Dockerfile").write_text(f"FROM {python_base}\nRUN echo about to fail && exit 3\n")
    broken = "us-central1-docker.pkg.dev/demo/trainers/broken:1"
    failed = gcloud(emu, "builds", "submit", "--tag", broken, str(source))
    assert failed.returncode != 0
    builds = json.loads(ok(gcloud(emu, "builds", "list", "--format=json")))
    assert [b["status"] for b in builds] == ["FAILURE"]
    detail = builds[0]["statusDetail"]
    assert detail.startswith("Step 2/2 : RUN echo about to fail && exit 3 failed: ")
    assert "returned a non-zero code: 3" in detail and "about to fail" in detail
    assert engine.image(broken) is None  # nothing pushed


@pytest.mark.timeout(600)
def test_a_failed_worker_is_restarted_as_a_new_container_and_the_job_succeeds(
    client: Any, root: Path, engine: ContainerEngine, root_image: str
) -> None:
    job = create(client, [pool(1, root_image, args=["none"]), pool(1, root_image, args=["flaky"])])
    done = wait(client, root, job)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    starts = (root / "gcs/bkt/starts/workerpool1-0").read_text().split()
    assert len(starts) == 2  # exit 5 once: restarted once ("Restart workers during the job")
    assert ours(engine, root) == []


@pytest.mark.timeout(600)
def test_preempting_a_spot_job_of_containers_stops_them_with_sigterm_and_fails_it_stockout(
    root: Path, engine: ContainerEngine, root_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with emulator.start(root) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        pools = [pool(1, root_image, args=["sleep"]), pool(1, root_image, args=["sleep"])]
        job = create(client, pools, scheduling={"strategy": "SPOT"})
        names = ["workerpool0-0", "workerpool1-0"]
        logs = [job_dir(root, job) / f"{n}.log" for n in names]
        deadline = time.monotonic() + 120
        while not all(p.exists() and "sleeping" in p.read_text() for p in logs):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        ended = emu.preempt(job.name)
    assert ended.state == JobState.JOB_STATE_FAILED
    assert ended.error.message.startswith("STOCKOUT: ")
    assert sorted(os.listdir(root / "gcs/bkt/term")) == names  # SIGTERM first, as on Vertex
    assert ours(engine, root) == []


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_pytorch_ddp_example_trains_across_three_containers(
    client: Any, root: Path, engine: ContainerEngine, torch_image: str, tmp_path: Path
) -> None:
    # the example's trainer with trainpool's runtime beside it, as a user's Dockerfile
    # copies both, on an image with PyTorch; 1 primary + 2 workers, gloo across containers
    context = tmp_path / "context"
    shutil.copytree(Path(__file__).resolve().parents[1] / "examples/pytorch_ddp", context)
    vendored_runtime(context)
    (context / "Dockerfile").write_text(
        f"FROM {torch_image}\nWORKDIR /app\nCOPY . /app\n"
        'ENTRYPOINT ["python3", "-m", "trainer.task"]\n'
    )
    image = "trainpool-test/pytorch-ddp:1"
    engine.client.images.build(path=str(context), tag=image, rm=True, forcerm=True)
    pools = [pool(1, image, args=["--epochs=1"]), pool(2, image, args=["--epochs=1"])]
    job = create(client, pools, base_output_directory={"output_uri_prefix": "gs://bkt/ddp"})
    done = wait(client, root, job, timeout=600)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    assert (root / "gcs/bkt/ddp/model/model.pt").is_file()  # the chief's, through /gcs
    for rank, name in enumerate(["workerpool0-0", "workerpool1-0", "workerpool1-1"]):
        lines = [e["m"] for e in entries(root, job, name)]
        assert any(line.startswith(f"{name} rank {rank}/3 epoch 1") for line in lines), lines
    assert ours(engine, root) == []


@needs_gcloud
@pytest.mark.timeout(600)
def test_a_base_the_engine_cannot_have_is_built_into_the_image_store_saying_so(
    emu: emulator.Emulator, engine: ContainerEngine, tmp_path: Path
) -> None:
    # a base that cannot be pulled here and has no stand-in (NVIDIA's NGC images): the build
    # is the local image store's, as with no engine, and its log says why
    base = "nvcr.io/nvidia/pytorch:24.01-py3"
    source = tmp_path / "source"
    source.mkdir()
    (source / "Dockerfile").write_text(f"FROM {base}\nENV STAGE=imitated\n")
    image = "us-central1-docker.pkg.dev/demo/trainers/imitated:1"
    said = ok(gcloud(emu, "builds", "submit", "--tag", image, str(source)))
    assert f"FROM {base}: the container engine does not have it and cannot pull it" in said
    assert "building into the local image store instead" in said
    stored = image_store.lookup(image, emu.root)
    assert stored is not None and stored.env.get("STAGE") == "imitated"
    assert engine.image(image) is None


@pytest.mark.timeout(300)
def test_gpus_asked_of_an_engine_without_a_gpu_runtime_are_said_not_passed(
    client: Any, root: Path, engine: ContainerEngine, root_image: str
) -> None:
    # a pool asking for accelerators gets this machine's GPUs where the engine has the NVIDIA
    # runtime (docker run --gpus: a DeviceRequest); here it has none, so the job runs without
    # them and its log says so, never silently
    asked = pool(1, root_image, args=["exit", "0"])
    asked["machine_spec"] = {
        "machine_type": "n1-standard-4",
        "accelerator_type": "NVIDIA_TESLA_T4",
        "accelerator_count": 1,
    }
    job = create(client, [asked])
    done = wait(client, root, job)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    log = (job_dir(root, job) / "job.log").read_text()
    if engine.gpu_runtime:
        assert "1 NVIDIA_TESLA_T4 asked: 1 of this machine's GPUs go to each container" in log
    else:
        assert "1 NVIDIA_TESLA_T4 asked, and the engine has no GPU runtime" in log


def test_the_gpu_runtime_is_the_nvidia_one_the_engine_names() -> None:
    # docker info's Runtimes, where the NVIDIA Container Toolkit registers "nvidia"
    info = {"Runtimes": {"runc": {}, "nvidia": {"path": "x"}}}
    assert containers.gpu_runtime(info) == "nvidia"
    assert containers.gpu_runtime({"Runtimes": {"runc": {}, "io.containerd.runc.v2": {}}}) == ""
    assert containers.gpu_runtime({}) == ""  # an engine that did not say


@pytest.mark.timeout(600)
def test_the_build_image_components_local_path_builds_on_the_engine_and_a_job_runs_it(
    emu: emulator.Emulator, engine: ContainerEngine, python_base: str, tmp_path: Path
) -> None:
    # the build_image component's local path (images.service.build_image, backend auto, no
    # project) with an emulator whose engine answers: a real docker build (its RUN step ran),
    # kept in the engine under the content tag and named by its id; built again, found; a
    # job naming it runs as containers of it
    source = tmp_path / "trainer"
    source.mkdir()
    (source / "Dockerfile").write_text(dockerfile(python_base))
    (source / "task.py").write_text(TASK)
    built = build_image(source, image_uri="local/engine-built", root=emu.root, log=lambda _: None)
    assert built.backend == "container-engine" and not built.cached
    name, _, image_id = built.image_uri.partition("@")
    assert name == f"local/engine-built:{built.tag}"
    assert engine.client.images.get(name).id == image_id
    assert image_store.lookup(name, emu.root) is None  # not imitated: the engine's
    again = build_image(source, image_uri="local/engine-built", root=emu.root, log=lambda _: None)
    assert again.cached and again.image_uri == built.image_uri
    client = job_client("us-central1")
    job = create(client, [pool(1, built.image_uri)])
    done = wait(client, emu.root, job)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    assert records(emu.root, job, "workerpool0-0")["built"] == "built-by-a-run-step"
    engine.client.images.remove(name)


@pytest.mark.timeout(300)
def test_a_local_build_whose_base_the_engine_cannot_have_goes_to_the_image_store_saying_so(
    emu: emulator.Emulator, engine: ContainerEngine, tmp_path: Path
) -> None:
    # as a Cloud Build on the engine does: a base neither pullable nor stood in (NVIDIA's NGC
    # images here) makes the build the local image store's, and its notes say why
    source = tmp_path / "trainer"
    source.mkdir()
    (source / "Dockerfile").write_text("FROM nvcr.io/nvidia/pytorch:24.01-py3\nENV STAGE=x\n")
    built = build_image(source, image_uri="local/ngc-based", root=emu.root, log=lambda _: None)
    assert any("built into the local image store instead" in note for note in built.notes)
    assert any("nvcr.io/nvidia/pytorch:24.01-py3" in note for note in built.notes)
    stored = image_store.lookup(built.image_uri, emu.root)
    assert stored is not None and stored.env.get("STAGE") == "x"


@pytest.mark.timeout(600)
def test_a_local_runs_task_is_a_container_of_its_components_base_image(
    engine: ContainerEngine, python_base: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as on Vertex AI Pipelines, where each task is a container of its component's image: a
    # lightweight component on python:3.11-slim runs in a container of it (its kfp bootstrap,
    # pip install kfp, inside), its artifact written at /gcs; the task's log says so; no
    # container is left
    from fixtures.pipelines import compile_fixture

    from trainpool.emulated.pipeline_run import run_local

    monkeypatch.delenv("VERTEX_AI_EMULATOR_HOST", raising=False)
    pipeline = compile_fixture("in_containers", tmp_path)
    result = run_local(pipeline, {"greeting": "hi"}, tmp_path / "root")
    assert result.state == "SUCCEEDED", result.error
    assert result.outputs["Output"] == "container=True python=3.11 gcs=True"
    transcript = result.transcript.read_text()
    assert "a container of python:3.11-slim" in transcript
    assert ours(engine, tmp_path / "root") == []


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_gcpc_launchers_task_is_a_container_of_gcpcs_image_and_its_job_of_its_own(
    engine: ContainerEngine, python_base: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GCPC's CustomTrainingJobOp in a local run: its task a container of GCPC's image (the
    # stand-in: the package at the image's version, from the index), whose launcher creates
    # the CustomJob through the emulator's API (HTTPS proxy, CA bundle, Google's client hook,
    # as in any container) and follows it; the job's two replicas containers of python:3.11-slim
    from fixtures.pipelines import compile_fixture
    from google_cloud_pipeline_components import __version__ as gcpc_version

    from trainpool.emulated.pipeline_run import run_local

    monkeypatch.delenv("VERTEX_AI_EMULATOR_HOST", raising=False)
    pipeline = compile_fixture("gcpc_in_containers", tmp_path)
    root = tmp_path / "root"
    result = run_local(pipeline, {}, root)
    assert result.state == "SUCCEEDED", result.error
    transcript = result.transcript.read_text()
    image = f"gcr.io/ml-pipeline/google-cloud-pipeline-components:{gcpc_version}"
    assert f"a container of {image}" in transcript, transcript[-3000:]
    (job,) = [p for p in (root / "jobs").iterdir() if (p / "job.log").is_file()]
    assert "role workerpool0 0" in (job / "workerpool0-0.log").read_text()
    assert "role workerpool1 0" in (job / "workerpool1-0.log").read_text()
    assert "each replica is a container of python:3.11-slim" in (job / "job.log").read_text()
    assert ours(engine, root) == []


@pytest.mark.timeout(600)
def test_a_pipeline_jobs_task_is_a_container_of_its_components_base_image(
    engine: ContainerEngine, python_base: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the same through Vertex AI Pipelines' door: aiplatform.PipelineJob as users submit it
    from fixtures.pipelines import compile_fixture
    from google.cloud import aiplatform

    from trainpool.testing import emulated_vertex

    fresh_pipeline_sdk(monkeypatch)
    with emulated_vertex(tmp_path / "root", "demo") as emu:
        job = aiplatform.PipelineJob(
            display_name="in-containers",
            template_path=str(compile_fixture("in_containers", tmp_path)),
            pipeline_root="gs://demo-root/runs",
            parameter_values={"greeting": "hi"},
            enable_caching=False,
            project="demo",
            location="us-central1",
        )
        job.submit()
        job.wait()
        (task,) = [t for t in job.task_details if t.task_name == "where-am-i"]
        said = task.execution.metadata["output:Output"]
        assert said == "container=True python=3.11 gcs=True"
        assert ours(engine, emu.root) == []


HYPERTUNE_DOCKERFILE = """\
FROM python:3.11-slim
RUN echo {run} && pip install cloudml-hypertune
COPY trainer.py /trainer.py
ENTRYPOINT ["python", "/trainer.py"]
"""
HYPERTUNE_TRAINER = """\
import sys
import hypertune

x = float([a for a in sys.argv if a.startswith("--x=")][0][4:])
hypertune.HyperTune().report_hyperparameter_tuning_metric(
    hyperparameter_metric_tag="score", metric_value=x * 10, global_step=1
)
"""


def reaches_the_index() -> str:
    """Why this machine cannot reach the package index (https://pypi.org), or ''."""
    import urllib.request

    try:
        with urllib.request.urlopen("https://pypi.org/simple/cloudml-hypertune/", timeout=20):
            return ""
    except OSError as err:
        return f"https://pypi.org cannot be reached from this machine: {err}"


@needs_gcloud
@pytest.mark.timeout(600)
def test_a_run_step_installs_from_the_index_through_the_machines_ca_bundle(
    emu: emulator.Emulator, engine: ContainerEngine, python_base: str, tmp_path: Path
) -> None:
    # behind a TLS-intercepting proxy (this machine's network), `RUN pip install` trusts the
    # proxy only through the CA bundle the stand-in base carries (TRAINPOOL_CA_BUNDLE, by
    # default this machine's); then a sweep's trials import hypertune and report a metric
    why = reaches_the_index()
    if why:
        pytest.skip(why)
    bundle = debian_bases.ca_bundle()
    assert bundle is not None, "this machine has a CA bundle (SSL_CERT_FILE or Debian's path)"
    base = engine.client.images.get(python_base)
    assert base.labels[debian_bases.CA_LABEL] == bundle.label  # python_base made it with it
    source = tmp_path / "source"
    source.mkdir()
    # a step of its own each run: the engine's build cache never stands in for the download
    (source / "Dockerfile").write_text(HYPERTUNE_DOCKERFILE.format(run=uuid.uuid4().hex))
    (source / "trainer.py").write_text(HYPERTUNE_TRAINER)
    tagged = engine.image("python:3.11-slim")
    if tagged is not None and debian_bases.LABEL in tagged.labels:
        engine.client.images.remove("python:3.11-slim")  # an earlier build's tag: said again
    image = "us-central1-docker.pkg.dev/demo/trainers/hpt:ca"
    said = ok(gcloud(emu, "builds", "submit", "--tag", image, str(source), timeout=500))
    assert "Successfully installed cloudml-hypertune" in said, said
    if tagged is None or debian_bases.LABEL in tagged.labels:  # not a real, pulled base
        assert f"trusts the {len(bundle.certificates)} certificates of {bundle.path}" in said
    client = job_client("us-central1")
    done = grid_sweep(client, image, "gs://bkt/hpt-ca")
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    assert sorted(t.final_measurement.metrics[0].value for t in done.trials) == [10.0, 20.0]
    logs = "".join(p.read_text() for p in (emu.root / "jobs").glob("*/job.log"))
    assert f"{image} is built on the stand-in of python:3.11-slim" in logs
    assert f"trusts the {len(bundle.certificates)} certificates of" in logs


@pytest.mark.timeout(300)
def test_an_engine_that_goes_away_mid_job_fails_the_job_naming_it(
    root: Path, engine: ContainerEngine, python_base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a dockerd of the test's own (the shared one is never touched), holding the stand-in,
    # killed while the job's replica sleeps: the job ends FAILED naming the engine
    interfaces = set(os.listdir("/sys/class/net"))  # the shared engine's docker0 among them
    second = SecondEngine()
    try:
        client = second.start()
        client.images.load(engine.client.api.get_image(python_base))  # by name: tagged
        monkeypatch.setenv("DOCKER_HOST", second.url)
        sleep = ["python3", "-c", "import time; print('sleeping', flush=True); time.sleep(600)"]
        with emulator.start(root) as emu:
            monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
            jobs = job_client("us-central1")
            job = create(jobs, [pool(1, python_base, command=sleep)])
            log = job_dir(root, job) / "workerpool0-0.log"
            deadline = time.monotonic() + 120
            while not (log.exists() and "sleeping" in log.read_text()):
                assert time.monotonic() < deadline, (job_dir(root, job) / "job.log").read_text()
                time.sleep(0.1)
            assert jobs.get_custom_job(name=job.name).state == JobState.JOB_STATE_RUNNING
            second.kill()
            done = wait(jobs, root, job, timeout=120)
            assert done.state == JobState.JOB_STATE_FAILED
            assert done.error.code == 14  # UNAVAILABLE
            assert second.url in done.error.message, done.error.message
            assert second.url in log.read_text()
            # a job created once it is gone fails too, naming it, before any replica starts
            late = wait(jobs, root, create(jobs, [pool(1, python_base, command=sleep)]), 60)
            assert late.state == JobState.JOB_STATE_FAILED and late.error.code == 14
            assert late.error.message.startswith("the container engine went away: ")
            assert second.url in late.error.message
    finally:
        second.close()
    assert not os.path.exists(second.dir)
    assert set(os.listdir("/sys/class/net")) == interfaces  # its bridge gone, no other


FILL_ITS_DISK = "dd if=/dev/zero of=/filler bs=1M count=2000"
"""Writes more than the test's engine disk holds, into the container's own files."""


@pytest.mark.timeout(300)
def test_a_full_engine_disk_fails_runs_and_builds_resource_exhausted_naming_it(
    root: Path, engine: ContainerEngine, python_base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a dockerd of the test's own whose data is a 1200 MiB tmpfs (room for the stand-in and a
    # container's copy of it, vfs): a replica that writes into its own files until the disk is
    # full fails the job RESOURCE_EXHAUSTED (not as the exit 1 of user code it ends with),
    # naming the engine's disk; so does a replica that cannot start for want of room, and a
    # build whose RUN step fills it, from Local.Engine (the build_image component's path)
    import grpc

    from trainpool.emulator_client.registry import engine_call

    second = SecondEngine(data_size="1200m")
    try:
        client = second.start()
        client.images.load(engine.client.api.get_image(python_base))  # by name: tagged
        monkeypatch.setenv("DOCKER_HOST", second.url)
        disk = f"the container engine's data {second.dir}/data ("
        with emulator.start(root) as emu:
            monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
            jobs = job_client("us-central1")
            filling = FILL_ITS_DISK.split()
            done = wait(jobs, root, create(jobs, [pool(1, python_base, command=filling)]), 180)
            assert done.state == JobState.JOB_STATE_FAILED
            assert done.error.code == 8, done.error.message  # RESOURCE_EXHAUSTED
            said = done.error.message
            assert said.startswith(f"No space left on the disk of {disk}"), said
            assert f"at {second.url}): " in said  # the engine, named
            assert "workerpool0-0 exited with a non-zero status of 1" in said
            assert "with its container engine's disk full" in said
            assert not ours(ContainerEngine(client, second.url), root)  # the room is back
            filler = fill(Path(second.dir, "data"))  # the disk filled by someone else
            late = wait(jobs, root, create(jobs, [pool(1, python_base, args=["exit", "0"])]), 60)
            assert late.state == JobState.JOB_STATE_FAILED
            assert late.error.code == 8, late.error.message
            assert f"No space left on the disk of {disk}" in late.error.message
            filler.unlink()
            context = root.parent / "context.tar.gz"
            with tarfile.open(context, "w:gz") as tar:
                text = f"FROM {python_base}\nRUN {FILL_ITS_DISK}\n".encode()
                info = tarfile.TarInfo("Dockerfile")
                info.size = len(text)
                tar.addfile(info, io.BytesIO(text))
            with pytest.raises(grpc.RpcError) as refused:
                engine_call(emu.address, "build", 240, context=str(context), image="local/full:1")
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert f"No space left on the disk of {disk}" in refused.value.details()
            assert f"Step 2/2 : RUN {FILL_ITS_DISK} failed" in refused.value.details()
    finally:
        second.close()


@pytest.mark.timeout(300)
def test_an_image_the_engine_lacks_is_pulled_as_docker_run_pulls_it(
    client: Any, root: Path, engine: ContainerEngine, python_base: str, loopback_registry: str
) -> None:
    # a user's machine pulls a job's image it lacks from its registry (`docker run` does); so
    # does the emulator, here from a registry on loopback (Debian's docker-registry)
    repository = f"{loopback_registry}/trainers/pulled"
    engine.client.images.get(python_base).tag(repository, "1")
    engine.client.images.push(repository, "1")
    engine.client.images.remove(f"{repository}:1")
    assert engine.image(f"{repository}:1") is None
    said = ["python3", "-c", "print('ran in the pulled image', flush=True)"]
    job = create(client, [pool(1, f"{repository}:1", command=said)])
    done = wait(client, root, job)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    folder = job_dir(root, job)
    assert "ran in the pulled image" in (folder / "workerpool0-0.log").read_text()
    log = (folder / "job.log").read_text()
    assert f"workerpool0: {repository}:1: pulled by {engine.describe}" in log
    assert engine.image(f"{repository}:1") is not None
    engine.client.images.remove(f"{repository}:1")


@pytest.mark.timeout(300)
def test_an_image_no_one_has_fails_the_job_at_once_saying_how_to_build_it(
    client: Any, root: Path, engine: ContainerEngine
) -> None:
    # neither the engine, nor the local image store, nor Vertex's prebuilt catalog has it,
    # and nothing pulls it here: the job fails, its command never run on the host
    image = "us-central1-docker.pkg.dev/demo/trainers/nothing:1"
    assert engine.image(image) is None
    command = ["python3", "-c", "print('ran on the host')"]
    job = create(client, [pool(1, image, command=command)])
    done = wait(client, root, job, timeout=60)
    assert done.state == JobState.JOB_STATE_FAILED
    message = done.error.message
    assert message.startswith(f"workerPoolSpecs[0].containerSpec.imageUri: {image!r} is not ")
    assert engine.describe in message
    assert f"`docker build -t {image} DIR`" in message
    assert f"`gcloud builds submit --tag {image} DIR`" in message
    assert not (job_dir(root, job) / "workerpool0-0.log").exists()  # nothing started
    # an image the emulator imitates still runs, engine or not: one of its local image store
    stored = host_image(root)
    job = create(client, [pool(1, stored, command=command)])
    done = wait(client, root, job)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    assert "ran on the host" in (job_dir(root, job) / "workerpool0-0.log").read_text()
    assert (
        f"the Python environment of local image {stored}"
        in (job_dir(root, job) / "job.log").read_text()
    )


@pytest.mark.timeout(900)
def test_trainpools_own_components_are_containers_of_their_dependencies_with_this_trainpool(
    engine: ContainerEngine, python_base: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # trainpool's components image, on Vertex the root Dockerfile's image: here a container of
    # its dependencies' image (the Dockerfile's FROM, trainpool's requirements at
    # constraints.txt's versions, built on the engine once) with this checkout's trainpool
    # bound read-only, so an edit runs without a new publish. plan_cluster plans from inside
    # one; build_image's local path hands its context to the emulator's engine through a
    # folder both sides see (the store is read-only in the task)
    from fixtures.pipelines import compile_fixture

    import trainpool
    from trainpool.emulated.pipeline_run import run_local
    from trainpool.emulator.pipeline_jobs import components_image

    monkeypatch.delenv("VERTEX_AI_EMULATOR_HOST", raising=False)
    source = tmp_path / "trainer"
    source.mkdir()
    (source / "Dockerfile").write_text(dockerfile(python_base))
    (source / "task.py").write_text(TASK)
    request = {"primary": {"machine_type": "n1-standard-4"}}
    pipeline = compile_fixture("own_components", tmp_path)
    root = tmp_path / "root"
    result = run_local(pipeline, {"cluster_request": request, "source_dir": str(source)}, root)
    assert result.state == "SUCCEEDED", result.error
    mount = f"{components_image.SOURCE_MOUNT}/trainpool"
    assert result.outputs["trainpool"] == f"{mount} writable=False container=True"
    assert result.outputs["pools"][0]["machineSpec"]["machineType"] == "n1-standard-4"
    name, _, image_id = result.outputs["image_uri"].partition("@")
    assert name.startswith("local/own-built:ctx-")
    assert engine.client.images.get(name).id == image_id  # built on the engine: not the store
    transcript = result.transcript.read_text()
    recipe = components_image.recipe()
    assert f"a container of {recipe.tag}" in transcript
    assert f"this checkout's trainpool ({Path(trainpool.__file__).parent})" in transcript
    # the dependencies image holds trainpool's requirements at constraints.txt's versions
    pinned = [line for line in recipe.constraints.splitlines() if line.startswith("kfp==")]
    said = engine.client.containers.run(
        recipe.tag, ["python3", "-c", "import kfp; print(f'kfp=={kfp.__version__}')"], remove=True
    )
    assert said.decode().split() == pinned
    assert ours(engine, root) == []
    engine.client.images.remove(name)


@pytest.mark.timeout(600)
def test_a_components_task_whose_dependencies_cannot_be_built_runs_in_its_sandbox_saying_why(
    engine: ContainerEngine, python_base: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a requirement the package index does not have: the dependencies image's pip step fails;
    # the task runs in its sandbox (this emulator's packages), its log naming the failed step
    from fixtures.pipelines import compile_fixture

    from trainpool.emulated.pipeline_run import run_local
    from trainpool.emulator.pipeline_jobs import components_image

    monkeypatch.delenv("VERTEX_AI_EMULATOR_HOST", raising=False)
    real = components_image.recipe()
    broken = dataclasses.replace(
        real, requirements=(*real.requirements, "trainpool-no-such-package==0.0.1")
    )
    monkeypatch.setattr(components_image, "recipe", lambda source=None: broken)
    root = tmp_path / "root"
    result = run_local(compile_fixture("which_trainpool", tmp_path), {}, root)
    assert result.state == "SUCCEEDED", result.error
    # this emulator's packages with its trainpool linked first, not the bound one
    folder = result.outputs["Output"].split()[0]
    assert folder.startswith(str(root / "stand-ins" / "trainpool-source")), folder
    transcript = result.transcript.read_text()
    assert "trainpool's components image: Step 3/4 : RUN python3 -m pip install" in transcript
    assert "trainpool-no-such-package==0.0.1" in transcript
    assert "the task runs in its sandbox" in transcript
    assert engine.image(broken.tag) is None
    assert ours(engine, root) == []


@pytest.mark.timeout(300)
def test_a_containers_output_the_store_cannot_hold_fails_the_job_naming_what_was_kept(
    engine: ContainerEngine, python_base: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the container follower keeps what fits, as the guard's pumps do, and says so with the
    # replica's exit: RESOURCE_EXHAUSTED naming the store's disk, never SUCCEEDED
    from fixtures.disks import SPEAK, tmpfs

    disk = tmpfs(tmp_path / "disk", "20M")
    root = next(disk) / "root"
    try:
        with emulator.start(root, storage=False) as emu:
            monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
            client = job_client("us-central1")
            job = create(client, [pool(1, python_base, command=["python3", "-c", SPEAK])])
            done = wait(client, root, job, 120)
            assert done.state == JobState.JOB_STATE_FAILED, done.error.message
            assert done.error.code == 8, done.error.message  # RESOURCE_EXHAUSTED
            message = done.error.message
            assert message.startswith(f"No space left on the disk of the emulator's store {root}")
            assert "workerpool0-0's output could not all be kept" in message
            assert "exited with status 0" in message  # its own run went well
            assert ours(engine, root) == []
    finally:
        next(disk, None)
