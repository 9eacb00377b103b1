"""Every client inside a replica and a pipeline task reaches the emulator, as under
``trainpool exec`` (emulator/jobs/vertex_access.py ``https_env``, kfp_local/task_env.py):
the HTTPS proxy and its CA, gcloud's and gsutil's configuration pointed here, the REST door.

The shapes are Google's: the XGBoost training notebook's trainer copies its data with
``gsutil cp gs://BUCKET/data.csv .`` inside the job
(notebooks/official/training/hyperparameter_tuning_xgboost.ipynb in vertex-ai-samples),
here on a 2-replica CustomJob and in a pipeline task; curl as the REST reference writes it
(``Authorization: Bearer $(gcloud auth print-access-token)``), ``gcloud ai`` and the SDK on
``api_transport="rest"`` inside a replica, and ``tf.io.gfile`` where TensorFlow is here. A
Google API the emulator does not serve is refused at once, naming it. One job runs every
command, gcloud's start being slow.
"""

import json
import shutil
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_image import host_image
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT, fresh_pipeline_sdk
from google.cloud import aiplatform, storage
from google.cloud.aiplatform_v1.types.job_state import JobState
from kfp import compiler, dsl

from trainpool.emulator.jobs import vertex_access
from trainpool.emulator.jobs.job_context import JobContext
from trainpool.home import Home
from trainpool.testing import emulated_vertex
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(240)
needs_cli = pytest.mark.skipif(
    shutil.which("gsutil") is None or shutil.which("gcloud") is None,
    reason="gsutil and gcloud (Google Cloud CLI) are not installed",
)
CSV = "x,y\n1,2\n3,4\n"
TF_PYTHON = Path(__file__).resolve().parents[1] / ".venv-tf" / "bin" / "python"
"""TensorFlow's Python where this checkout has one (``bash scripts/setup``): the worker
replica also reads with ``tf.io.gfile`` through it."""

TRAINER = r"""
import json, os, subprocess, sys, time
task = json.loads(os.environ["CLUSTER_SPEC"])["task"]
me = f"{task['type']}-{task['index']}"
print(f"{me} started", flush=True)
def sh(command):
    started = time.monotonic()
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=150)
    return {"rc": done.returncode, "out": done.stdout, "err": done.stderr[-3000:],
            "s": round(time.monotonic() - started, 1)}
seen = {"gsutil": sh("gsutil cp gs://xgb-data/data.csv .")}
seen["csv"] = open("data.csv").read()
if task["type"] == "workerpool1" and os.path.exists(sys.argv[2]):
    # TensorFlow's own Cloud Storage file system (libcurl, ADC), in this replica's environment
    seen["gfile"] = sh(f"{sys.argv[2]} -c 'import tensorflow as tf; "
        "print(tf.io.gfile.GFile(\"gs://xgb-data/data.csv\").read(), end=\"\")'")
seen["env"] = {k: os.environ.get(k) for k in ("CLUSTER_SPEC", "CLOUD_ML_JOB_ID",
    "AIP_MODEL_DIR", "HTTPS_PROXY", "GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CONFIG", "HOME")}
if task["type"] == "workerpool0":
    job = os.environ["CLOUD_ML_JOB_ID"]
    token = sh("gcloud auth print-access-token")["out"].strip()
    seen["curl"] = sh(f'curl -sS -H "Authorization: Bearer {token}" '
        '"https://storage.googleapis.com/storage/v1/b/xgb-data/o/data.csv?alt=media"')
    seen["unserved"] = sh(f'curl -sS -H "Authorization: Bearer {token}" '
        '"https://translate.googleapis.com/language/translate/v2/languages"')
    seen["google"] = sh("curl -sS https://www.google.com/")
    seen["gcloud_ai"] = sh(f"gcloud ai custom-jobs describe {job} --region=us-central1 "
        "--format='value(displayName)'")
    seen["gcloud_logging"] = sh("gcloud logging read 'resource.type=\"ml_job\" AND "
        f"resource.labels.job_id=\"{job}\"' --format='value(jsonPayload.message)'")
    from google.cloud import aiplatform
    aiplatform.init(location=os.environ["CLOUD_ML_REGION"], api_transport="rest",
                    project=os.environ["CLOUD_ML_PROJECT_ID"])
    found = aiplatform.CustomJob.get(job)
    seen["sdk"] = [type(found.api_client._transport).__name__, found.display_name]
json.dump(seen, open(os.path.join(sys.argv[1], me + ".json"), "w"))
"""


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with emulated_vertex(tmp_path_factory.mktemp("inside") / "root", "demo") as running:
        bucket = storage.Client(project="demo").create_bucket("xgb-data")
        bucket.blob("data.csv").upload_from_string(CSV)
        yield running


@needs_cli
def test_gsutil_curl_gcloud_and_the_sdk_on_rest_inside_a_two_replica_job(
    emu: Any, tmp_path: Path
) -> None:
    (tmp_path / "trainer.py").write_text(TRAINER)
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {
            "image_uri": host_image(emu.root),
            "command": [
                sys.executable,
                str(tmp_path / "trainer.py"),
                str(tmp_path),
                str(TF_PYTHON),
            ],
        },
    }
    client = job_client("us-central1")
    created = client.create_custom_job(
        parent=PARENT,
        custom_job={"display_name": "xgb-shape", "job_spec": {"worker_pool_specs": [pool, pool]}},
    )
    done = wait_job(client.get_custom_job, created.name, 200)
    job_dir = Path(emu.root) / "jobs" / created.name.rsplit("/", 1)[1]
    assert done.state == JobState.JOB_STATE_SUCCEEDED, (
        done.error,
        [p.read_text()[-3000:] for p in sorted(job_dir.glob("workerpool*.log"))],
    )
    primary = json.loads((tmp_path / "workerpool0-0.json").read_text())
    worker = json.loads((tmp_path / "workerpool1-0.json").read_text())
    for seen in (primary, worker):
        assert seen["gsutil"]["rc"] == 0, seen["gsutil"]
        assert seen["csv"] == CSV
        env = seen["env"]
        # Vertex's own variables stay; nothing Vertex does not set is added
        assert json.loads(env["CLUSTER_SPEC"])["task"]["type"] in ("workerpool0", "workerpool1")
        assert env["CLOUD_ML_JOB_ID"] == created.name.rsplit("/", 1)[1]
        assert env["HTTPS_PROXY"] == emu.proxy_address
        assert env["GOOGLE_CLOUD_PROJECT"] is None
        # the replica's own gcloud configuration, outside its HOME (emptied at every start)
        assert env["CLOUDSDK_CONFIG"].startswith(str(job_dir / "gcloud"))
    if TF_PYTHON.exists():
        assert worker["gfile"]["rc"] == 0 and worker["gfile"]["out"] == CSV, worker["gfile"]
    assert primary["curl"]["rc"] == 0 and primary["curl"]["out"] == CSV, primary["curl"]
    unserved = json.loads(primary["unserved"]["out"])
    assert unserved["error"]["code"] == 403 and "translate" in unserved["error"]["message"]
    assert primary["unserved"]["s"] < 10  # at once, not after retries against Google
    google = primary["google"]
    assert google["rc"] != 0 and "CONNECT tunnel failed, response 403" in google["err"]
    assert primary["gcloud_ai"]["rc"] == 0, primary["gcloud_ai"]
    assert primary["gcloud_ai"]["out"].strip() == "xgb-shape"
    assert primary["gcloud_logging"]["rc"] == 0, primary["gcloud_logging"]
    assert "workerpool0-0 started" in primary["gcloud_logging"]["out"]
    assert primary["sdk"] == ["JobServiceRestTransport", "xgb-shape"]
    log = (job_dir / "job.log").read_text()
    assert "each replica is given this emulator's HTTPS proxy" in log


@dsl.component(base_image="python:3.11")
def fetch(uri: str) -> str:
    import subprocess

    subprocess.run(["gsutil", "cp", uri, "data.csv"], check=True, timeout=150)
    with open("data.csv") as handle:
        return handle.read()


@dsl.pipeline(name="gsutil-in-a-task")
def gsutil_in_a_task(uri: str = "gs://xgb-data/data.csv") -> str:
    return fetch(uri=uri).output


@needs_cli
def test_gsutil_cp_inside_a_pipeline_task(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh_pipeline_sdk(monkeypatch)
    template = tmp_path / "gsutil.yaml"
    compiler.Compiler().compile(gsutil_in_a_task, str(template))
    job = aiplatform.PipelineJob(
        display_name="gsutil-in-a-task",
        template_path=str(template),
        pipeline_root="gs://xgb-data/runs",
        enable_caching=False,
        project="demo",
        location="us-central1",
    )
    job.submit()
    try:
        job.wait()
    except RuntimeError:
        pass
    details = {t.task_name: t for t in job.task_details}
    run_log = Path(emu.root) / "pipelines" / job.name / "run.log"
    assert job.state.name == "PIPELINE_STATE_SUCCEEDED", (
        run_log.read_text()[-4000:] if run_log.is_file() else job.state
    )
    assert details["fetch"].execution.metadata["output:Output"] == CSV


def test_the_variables_a_replica_is_given_and_the_job_log_line(tmp_path: Path) -> None:
    home = Home(tmp_path / "root")
    home.root.mkdir()
    home.storage_token.write_text("s3cret")
    ctx = JobContext(
        home,
        "7",
        home.job("7"),
        "demo",
        "us-central1",
        vertex_address="unix:/tmp/x.sock",
        rest_address="http://127.0.0.1:9",
        proxy_address="http://127.0.0.1:8",
    )
    env = {"CLUSTER_SPEC": "{}", "CLOUDSDK_CORE_PROJECT": "demo", "HOME": str(tmp_path / "h")}
    added = vertex_access.https_env(ctx, "workerpool1-0", env)
    folder = home.job("7").dir / "gcloud" / "workerpool1-0"
    assert added["HTTPS_PROXY"] == added["https_proxy"] == "http://127.0.0.1:8"
    assert added["TRAINPOOL_REST_URL"] == "http://127.0.0.1:9"
    assert added["CLOUDSDK_CONFIG"] == str(folder)
    assert added["BOTO_CONFIG"] == str(folder / "boto.cfg")
    assert added["SSL_CERT_FILE"] == added["CURL_CA_BUNDLE"] == str(home.ca_bundle)
    assert "default_project_id = demo" in (folder / "boto.cfg").read_text()
    assert (
        "127.0.0.1:9/aiplatform.googleapis.com/"
        in (folder / "configurations" / "config_default").read_text()
    )
    assert not set(added) & {"CLUSTER_SPEC", "GOOGLE_CLOUD_PROJECT", "HOME"}
    assert not home.gcloud_config.exists()  # trainpool exec's configuration is not touched
    assert "HTTPS proxy (http://127.0.0.1:8)" in vertex_access.proxy_note(ctx)
    alone = replace(ctx, proxy_address="")
    assert vertex_access.https_env(alone, "workerpool1-0", env) == {}
    assert vertex_access.proxy_note(alone) == vertex_access.NO_PROXY_NOTE
