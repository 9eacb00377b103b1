"""Google's clients inside a replica's container reach the emulator as under ``trainpool exec``.

On Vertex a trainer calls the Vertex AI SDK, the gapic clients and gsutil with its service
account, from the metadata server, and nothing it does needs a key (Google's "Use a custom
service account" page). Here a replica's container gets what a replica process gets
(``jobs/vertex_access.py``): Google's client hook on ``PYTHONPATH`` for the gRPC clients,
the emulator's HTTPS proxy, the CA bundle that trusts it, and gsutil's and gcloud's
configuration for the REST ones. The image is a user's own: ``FROM python:3.11-slim``,
``pip install google-cloud-aiplatform gsutil`` (and ``google-auth-httplib2``, which gsutil's
PyPI release imports without requiring it: "No module named 'google_auth_httplib2'"), built
with ``docker build`` under ``trainpool exec`` as typed. A second image has curl (Debian's,
``apt-get install`` as Dockerfiles do) and gcloud (this machine's google-cloud-cli, its Python
part copied in, as Deep Learning Containers carry gcloud), and runs Google's REST recipe as
typed: ``curl -H "Authorization: Bearer $(gcloud auth print-access-token)"``, then ``gcloud
ai`` and ``gcloud storage``. Skipped, saying why, where no engine answers, the package index
or Debian's mirror cannot be reached from a container, or gcloud is absent.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from fixtures.jobs import wait_job
from fixtures.shell import run as shell
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.emulator.jobs.containers import ContainerEngine
from trainpool.vertex.clients import job_client

DOCKERFILE = """\
FROM python:3.11-slim
RUN pip install --quiet --no-cache-dir google-cloud-aiplatform gsutil google-auth-httplib2
COPY task.py /task.py
ENTRYPOINT ["python", "/task.py"]
"""
TASK = """\
import json, os, subprocess

from google.cloud import aiplatform, aiplatform_v1, storage

job_id = os.environ["CLOUD_ML_JOB_ID"]
project = os.environ["CLOUD_ML_PROJECT_ID"]
# the SDK as a trainer calls it: no project, no credentials given (the metadata server's)
aiplatform.init(location="us-central1")
listed = [j.display_name for j in aiplatform.CustomJob.list()]
# a gapic client at Google's regional endpoint, as the SDK makes it
client = aiplatform_v1.JobServiceClient(
    client_options={"api_endpoint": "us-central1-aiplatform.googleapis.com"}
)
name = f"projects/{project}/locations/us-central1/customJobs/{job_id}"
state = client.get_custom_job(name=name).state.name
# gsutil, as a trainer's shell step runs it, then google-cloud-storage reads what it wrote
with open("/tmp/note.txt", "w") as note:
    note.write("from gsutil in a container")
subprocess.run(["gsutil", "-q", "cp", "/tmp/note.txt", "gs://bkt/clients/note.txt"], check=True)
ls = subprocess.run(
    ["gsutil", "ls", "gs://bkt/clients/"], capture_output=True, text=True, check=True
).stdout.split()
read = storage.Client().bucket("bkt").blob("clients/note.txt").download_as_text()
print("CLIENTS " + json.dumps({"listed": listed, "state": state, "ls": ls, "read": read}),
      flush=True)
"""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_sdk_gapic_gsutil_and_storage_inside_a_container_reach_the_emulator(
    emu: emulator.Emulator, engine: ContainerEngine, python_base: str, tmp_path: Path
) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "Dockerfile").write_text(DOCKERFILE)
    (source / "task.py").write_text(TASK)
    image = "trainpool-test/clients:1"
    built = shell(emu, ["docker", "build", "-t", image, str(source)], timeout=800)
    said = built.stdout + built.stderr
    if built.returncode != 0 and "pip" in said and ("Could not" in said or "Retrying" in said):
        pytest.skip(f"the package index cannot be reached from a container here: {said[-1500:]}")
    assert built.returncode == 0, said[-4000:]
    printed = run_replica(emu, image, "clients")
    line = next(x for x in printed.splitlines() if x.startswith("CLIENTS "))
    seen = json.loads(line.removeprefix("CLIENTS "))
    assert seen == {
        "listed": ["clients"],  # the job itself, from the emulator
        "state": "JOB_STATE_RUNNING",
        "ls": ["gs://bkt/clients/note.txt"],
        "read": "from gsutil in a container",
    }
    stored = emu.root / "gcs" / "bkt" / "clients" / "note.txt"
    assert stored.read_text() == "from gsutil in a container"
    engine.client.images.remove(image, force=True)


def run_replica(emu: emulator.Emulator, image: str, display_name: str) -> str:
    """A 1-replica CustomJob of ``image`` (bucket ``bkt`` made first), ended SUCCEEDED; what
    its replica printed."""
    (emu.root / "gcs" / "bkt").mkdir(parents=True, exist_ok=True)
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": image},
    }
    client = job_client("us-central1")
    made = client.create_custom_job(
        parent=PARENT,
        custom_job={"display_name": display_name, "job_spec": {"worker_pool_specs": [pool]}},
    )
    folder = emu.root / "jobs" / made.name.rsplit("/", 1)[1]
    done = wait_job(client.get_custom_job, made.name, 300, logs=folder)
    printed = (folder / "workerpool0-0.log").read_text()
    assert done.state == JobState.JOB_STATE_SUCCEEDED, (done.error, printed[-3000:])
    return printed


SHELL_DOCKERFILE = """\
FROM python:3.11-slim
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends curl >/dev/null \\
 && rm -rf /var/lib/apt/lists/*
COPY google-cloud-sdk /usr/lib/google-cloud-sdk
RUN ln -s /usr/lib/google-cloud-sdk/bin/gcloud /usr/bin/gcloud
COPY task.sh /task.sh
ENTRYPOINT ["sh", "/task.sh"]
"""
SHELL_TASK = """\
set -eu
job="projects/$CLOUD_ML_PROJECT_ID/locations/us-central1/customJobs/$CLOUD_ML_JOB_ID"
# Google's REST samples as typed: a bearer token from gcloud, curl at the regional endpoint
token="$(gcloud auth print-access-token)"
curl -sS --fail -H "Authorization: Bearer $token" \\
  "https://us-central1-aiplatform.googleapis.com/v1/$job" > /tmp/job.json
echo "CURL $(python3 -c 'import json; print(json.load(open("/tmp/job.json"))["displayName"])')"
echo "GCLOUD $(gcloud ai custom-jobs describe "$job" --format='value(displayName,state)')"
echo "from gcloud in a container" > /tmp/note.txt
gcloud storage cp -q /tmp/note.txt gs://bkt/shell/note.txt
"""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_curl_and_gcloud_inside_a_container_reach_the_emulator(
    emu: emulator.Emulator, engine: ContainerEngine, python_base: str, tmp_path: Path
) -> None:
    # a user's image with curl (Debian's, apt-get as Dockerfiles do) and gcloud (this
    # machine's google-cloud-cli, copied in as Deep Learning Containers carry it): the token,
    # the REST call, `gcloud ai` and `gcloud storage` from a replica all answered here
    sdk = Path("/usr/lib/google-cloud-sdk")
    if not (sdk / "bin" / "gcloud").is_file():
        pytest.skip(f"no google-cloud-cli at {sdk} to copy into the image")
    version = (sdk / "VERSION").read_text().strip()
    recipe = hashlib.sha256((SHELL_DOCKERFILE + SHELL_TASK).encode()).hexdigest()[:12]
    image = f"trainpool-test/shell-clients:{version}-{recipe}"  # built once, then kept
    if engine.image(image) is None:
        build_shell_image(emu, sdk, image, tmp_path / "source")
    lines = run_replica(emu, image, "shell-clients").splitlines()
    assert "CURL shell-clients" in lines
    assert "GCLOUD shell-clients\tJOB_STATE_RUNNING" in lines
    stored = emu.root / "gcs" / "bkt" / "shell" / "note.txt"
    assert stored.read_text() == "from gcloud in a container\n"


def build_shell_image(emu: emulator.Emulator, sdk: Path, image: str, source: Path) -> None:
    """``docker build`` under ``trainpool exec`` of :data:`SHELL_DOCKERFILE` with ``sdk``'s
    Python part; skips where Debian's mirror cannot be reached from a container."""
    (source / "google-cloud-sdk").mkdir(parents=True)
    copied = source / "google-cloud-sdk"
    (copied / "bin").mkdir()
    for part in ("lib", "VERSION", "properties", "bin/gcloud"):  # its Python, not its tools
        # hard links where the folders share a file system (seconds), else a copy
        if subprocess.run(["cp", "-al", str(sdk / part), str(copied / part)]).returncode:
            subprocess.run(["cp", "-a", str(sdk / part), str(copied / part)], check=True)
    (source / ".dockerignore").write_text("**/__pycache__\n")  # compiled for another Python
    (source / "Dockerfile").write_text(SHELL_DOCKERFILE)
    (source / "task.sh").write_text(SHELL_TASK)
    built = shell(emu, ["docker", "build", "-t", image, str(source)], timeout=800)
    said = built.stdout + built.stderr
    if (
        built.returncode != 0
        and "apt-get" in said
        and ("Could not" in said or "Failed to fetch" in said)
    ):
        pytest.skip(f"Debian's mirror cannot be reached from a container here: {said[-1500:]}")
    assert built.returncode == 0, said[-4000:]
