"""A replica's environment is a container's: nothing of the emulator's own reaches it.

Vertex gives a replica its image's ENV, the pool's env and Vertex's variables
(https://cloud.google.com/vertex-ai/docs/training/code-requirements), and Cloud Storage
at /gcs/BUCKET (Cloud Storage FUSE); trainpool/emulator/host_env.py and gcs_mount.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.cluster_env import gcs
from trainpool.emulator.jobs import gcs_mount
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(60)

from trainpool.redirect import SITE  # noqa: E402

SENTINELS = {
    "GOOGLE_APPLICATION_CREDENTIALS": "/home/me/.config/gcloud/key.json",
    "AWS_SECRET_ACCESS_KEY": "secret",
    "CLOUDSDK_CORE_PROJECT": "my-project",
    "PYTHONPATH": "/sentinel/pythonpath",
    "VIRTUAL_ENV": "/sentinel/venv",
    "CUDA_VISIBLE_DEVICES": "0,1",
    "SENTINEL_X": "x",
}
DUMP = "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w'))"


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in SENTINELS.items():
        monkeypatch.setenv(name, value)
    with emulator.start(tmp_path / "root") as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        yield job_client("us-central1")


def run(client: Any, pool: dict[str, Any]) -> Any:
    pool = {"replica_count": 1, "machine_spec": {"machine_type": "n1-standard-4"}, **pool}
    job = {"display_name": "env", "job_spec": {"worker_pool_specs": [pool]}}
    created = client.create_custom_job(parent=PARENT, custom_job=job)
    return wait_job(client.get_custom_job, created.name, 30)


def command(argv: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"image_uri": "local/none", "command": argv}
    if env:
        spec["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return {"container_spec": spec}


def test_a_replica_sees_none_of_the_emulators_environment(client: Any, tmp_path: Path) -> None:
    dump = tmp_path / "env.json"
    done = run(client, command([sys.executable, "-c", DUMP, str(dump)], {"A": "1"}))
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    env = json.loads(dump.read_text())
    leaked = sorted(name for name, value in SENTINELS.items() if env.get(name) == value)
    assert not leaked, leaked
    # gcloud in a replica works in the job's project, as on Vertex (its metadata server's
    # project), never in the one the emulator's own shell had
    assert env.get("CLOUDSDK_CORE_PROJECT", "demo") == "demo"
    # PYTHONPATH holds the hook that points the trainer's Google clients at the emulator
    # (jobs/vertex_access.py), nothing of the emulator's own
    assert env["PYTHONPATH"] == str(SITE)
    given = {"CLOUDSDK_CORE_PROJECT", "PYTHONPATH", "GOOGLE_APPLICATION_CREDENTIALS"}
    assert not (set(SENTINELS) - given) & set(env)
    job_id = done.name.rsplit("/", 1)[-1]
    # the credentials are the replica's own, whose token only the emulator takes, as under
    # trainpool exec (jobs/vertex_access.py https_env), never the emulator's shell's
    own = tmp_path.resolve() / "root/jobs" / job_id / "gcloud/workerpool0-0"
    adc = own / "application_default_credentials.json"
    assert env["GOOGLE_APPLICATION_CREDENTIALS"] == str(adc)
    assert env["HOME"] == str(tmp_path.resolve() / "root" / "jobs" / job_id / "home/workerpool0-0")
    assert env["A"] == "1" and env["LANG"] == "C.UTF-8"
    assert "CLUSTER_SPEC" in env and "CLOUD_ML_JOB_ID" in env


def test_a_pools_pythonpath_is_kept(client: Any, tmp_path: Path) -> None:
    dump = tmp_path / "env.json"
    pool = command([sys.executable, "-c", DUMP, str(dump)], {"PYTHONPATH": "/opt/mine"})
    assert run(client, pool).state == JobState.JOB_STATE_SUCCEEDED
    assert json.loads(dump.read_text())["PYTHONPATH"] == f"{SITE}:/opt/mine"
    package = tmp_path / "pkg"
    (package / "dumper").mkdir(parents=True)
    (package / "dumper" / "__init__.py").write_text("")
    (package / "dumper" / "task.py").write_text(DUMP)
    spec = {
        "executor_image_uri": "python",
        "package_uris": [str(package)],
        "python_module": "dumper.task",
        "args": [str(dump)],
        "env": [{"name": "PYTHONPATH", "value": "/opt/mine"}],
    }
    assert run(client, {"python_package_spec": spec}).state == JobState.JOB_STATE_SUCCEEDED
    assert json.loads(dump.read_text())["PYTHONPATH"] == f"{SITE}:{package}:/opt/mine"


WRITE_GCS = (
    "import os; os.makedirs('/gcs/bkt/out', exist_ok=True); open('/gcs/bkt/out/x', 'w').write('hi')"
)


def test_a_replica_writes_under_gcs_into_the_store(client: Any, tmp_path: Path) -> None:
    mount = gcs_mount.mount()
    if mount.why:
        pytest.skip(f"/gcs is not available on this machine: {mount.why}")
    done = run(client, command([sys.executable, "-c", WRITE_GCS]))
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error
    stored = Path(gcs.to_path("gs://bkt/out/x", tmp_path.resolve() / "root" / "gcs", "test"))
    assert stored.read_text() == "hi"
    assert not Path("/gcs/bkt").exists()  # nothing is mounted outside the replica
