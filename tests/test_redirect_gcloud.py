"""gcloud commands typed as Google's documents and notebooks type them, under ``trainpool
exec``'s environment, against one emulator; each asserts what the emulator holds after.

The product documents' Reduction Server command (three ``--worker-pool-spec``), Google's
notebooks' ``gcloud builds submit --tag`` before their first job, ``gcloud ai
hp-tuning-jobs create --config``, ``gcloud ai models list``, a job's life (create, list,
describe, cancel), a staging bucket made, filled, emptied and deleted with ``gcloud storage``,
and an API the emulator does not serve, which fails at once naming it.
"""

from __future__ import annotations

import configparser
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.shell import gcloud, needs_gcloud, ok

import trainpool.emulator as emulator
from trainpool.images import image_store
from trainpool.redirect import gcloud as redirect_gcloud

pytestmark = [pytest.mark.timeout(300), needs_gcloud]
REGION = "--region=us-central1"
IMAGE = "us-central1-docker.pkg.dev/demo/trainers/trainer:1"
REDUCER = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
TRAINER = """
import json, os, sys, time
spec = json.loads(os.environ["CLUSTER_SPEC"])
print("cluster", json.dumps({pool: len(hosts) for pool, hosts in spec["cluster"].items()}))
print("task", spec["task"]["type"], spec["task"]["index"])
time.sleep(float(os.environ.get("SLEEP", "0")))
"""


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path_factory.mktemp("gcloud") / "root") as running:
        yield running


@pytest.fixture(scope="module")
def image(emu: emulator.Emulator, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The trainer built as Google's notebooks build theirs: ``gcloud builds submit --tag``."""
    source = tmp_path_factory.mktemp("trainer")
    (source / "task.py").write_text(TRAINER)
    (source / "Dockerfile").write_text(
        'FROM python:3.11-slim\nWORKDIR /app\nCOPY task.py .\nENTRYPOINT ["python3", "task.py"]\n'
    )
    built = ok(gcloud(emu, "builds", "submit", "--tag", IMAGE, str(source)))
    assert "REMOTE BUILD OUTPUT" in built or "SUCCESS" in built, built
    return IMAGE


def describe(emu: emulator.Emulator, kind: str, job_id: str) -> dict[str, Any]:
    return dict(
        json.loads(ok(gcloud(emu, "ai", kind, "describe", job_id, REGION, "--format=json")))
    )


def wait(emu: emulator.Emulator, kind: str, job_id: str, timeout_s: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        job = describe(emu, kind, job_id)
        if job["state"] in ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.5)


def created_id(output: str) -> str:
    """The job id from ``gcloud ai ... create --format=value(name)``."""
    return output.strip().splitlines()[-1].rsplit("/", 1)[1]


def built(emu: emulator.Emulator, name: str) -> tuple[list[str], dict[str, str]]:
    """The ENTRYPOINT and ENV of image ``name`` where a job naming it finds it: the container
    engine's, where the emulator has one (a real build), else the local image store's."""
    engine = emu.manager.containers
    if engine is not None:
        found = engine.image(name)
        assert found is not None, f"{name}: not in {engine.describe}"
        entrypoint = engine.client.images.get(name).attrs["Config"]["Entrypoint"]
        return list(entrypoint or []), found.env
    stored = image_store.lookup(name, emu.root)
    assert stored is not None, "pushed where a job naming it finds it"
    return stored.entrypoint, stored.env


def test_builds_submit_tag_builds_the_image_where_jobs_find_it(
    emu: emulator.Emulator, image: str
) -> None:
    entrypoint, _ = built(emu, image)
    assert entrypoint == ["python3", "task.py"]
    builds = json.loads(ok(gcloud(emu, "builds", "list", "--format=json")))
    assert [b["status"] for b in builds] == ["SUCCESS"]
    assert builds[0]["results"]["images"][0]["name"] == image


def test_builds_submit_config_runs_a_cloudbuild_yaml(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    (tmp_path / "Dockerfile").write_text("FROM python:3.11-slim\nENV STAGE=config\n")
    (tmp_path / "cloudbuild.yaml").write_text(
        "steps:\n- name: gcr.io/cloud-builders/docker\n"
        "  args: [build, -t, us-central1-docker.pkg.dev/demo/trainers/other:2, .]\n"
        "images: [us-central1-docker.pkg.dev/demo/trainers/other:2]\n"
    )
    ok(
        gcloud(
            emu, "builds", "submit", "--config", str(tmp_path / "cloudbuild.yaml"), str(tmp_path)
        )
    )
    _, env = built(emu, "us-central1-docker.pkg.dev/demo/trainers/other:2")
    assert env.get("STAGE") == "config"


def test_the_documents_reduction_server_command_succeeds(
    emu: emulator.Emulator, image: str
) -> None:
    # The product documents' command (seeds: "gcloud ai custom-jobs create ...
    # --worker-pool-spec=...reductionserver:latest"), with CPU machine types for this machine.
    made = ok(
        gcloud(
            emu,
            "ai",
            "custom-jobs",
            "create",
            REGION,
            "--display-name=reduction-server",
            f"--worker-pool-spec=machine-type=n1-standard-4,replica-count=1,container-image-uri={image}",
            f"--worker-pool-spec=machine-type=n1-standard-4,replica-count=2,container-image-uri={image}",
            f"--worker-pool-spec=machine-type=n1-highcpu-16,replica-count=4,container-image-uri={REDUCER}",
            "--format=value(name)",
        )
    )
    job_id = created_id(made)
    job = wait(emu, "custom-jobs", job_id)
    assert job["state"] == "JOB_STATE_SUCCEEDED", job
    pools = job["jobSpec"]["workerPoolSpecs"]
    assert [p.get("replicaCount") for p in pools] == ["1", "2", "4"]
    log = (emu.root / "jobs" / job_id / "workerpool1-1.log").read_text()
    assert 'cluster {"workerpool0": 1, "workerpool1": 2, "workerpool2": 4}' in log, log
    notes = (emu.root / "jobs" / job_id / "job.log").read_text()
    assert "Reduction Server with CPU-only primary and workers" in notes, "said, not refused"


def test_a_job_is_created_listed_described_and_cancelled(
    emu: emulator.Emulator, image: str, tmp_path: Path
) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(
        "workerPoolSpecs:\n"
        "  - machineSpec: {machineType: n1-standard-4}\n"
        "    replicaCount: 1\n"
        f"    containerSpec: {{imageUri: {image}, env: [{{name: SLEEP, value: '60'}}]}}\n"
    )
    job_id = created_id(
        ok(
            gcloud(
                emu,
                "ai",
                "custom-jobs",
                "create",
                REGION,
                "--display-name=long",
                f"--config={config}",
                "--format=value(name)",
            )
        )
    )
    listed = ok(
        gcloud(emu, "ai", "custom-jobs", "list", REGION, "--format=value(displayName,state)")
    )
    assert "long\t" in listed
    deadline = time.monotonic() + 60
    while describe(emu, "custom-jobs", job_id)["state"] != "JOB_STATE_RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.3)
    cancelled = gcloud(emu, "ai", "custom-jobs", "cancel", job_id, REGION)
    assert cancelled.returncode == 0, cancelled.stderr
    assert "Request to cancel CustomJob" in cancelled.stderr + cancelled.stdout
    assert wait(emu, "custom-jobs", job_id)["state"] == "JOB_STATE_CANCELLED"


def test_hp_tuning_jobs_create_with_a_config_runs_the_sweep(
    emu: emulator.Emulator, image: str, tmp_path: Path
) -> None:
    config = tmp_path / "sweep.yaml"
    config.write_text(
        "studySpec:\n"
        "  metrics: [{metricId: loss, goal: MINIMIZE}]\n"
        "  parameters: [{parameterId: lr, doubleValueSpec: {minValue: 0.01, maxValue: 0.1}}]\n"
        "trialJobSpec:\n"
        "  workerPoolSpecs:\n"
        "    - machineSpec: {machineType: n1-standard-4}\n"
        "      replicaCount: 1\n"
        f"      containerSpec: {{imageUri: {image}}}\n"
    )
    made = ok(
        gcloud(
            emu,
            "ai",
            "hp-tuning-jobs",
            "create",
            REGION,
            "--display-name=sweep",
            f"--config={config}",
            "--max-trial-count=2",
            "--parallel-trial-count=2",
            "--format=value(name)",
        )
    )
    job = wait(emu, "hp-tuning-jobs", created_id(made))
    assert job["maxTrialCount"] == 2 and len(job["trials"]) == 2, job
    assert all(t["parameters"][0]["parameterId"] == "lr" for t in job["trials"])


def test_models_upload_and_list(emu: emulator.Emulator) -> None:
    ok(
        gcloud(
            emu,
            "ai",
            "models",
            "upload",
            REGION,
            "--display-name=ranker",
            "--container-image-uri=us-docker.pkg.dev/vertex-ai/prediction/sklearn-cpu.1-0:latest",
            "--artifact-uri=gs://demo-models/ranker",
        )
    )
    models = json.loads(ok(gcloud(emu, "ai", "models", "list", REGION, "--format=json")))
    assert [m["displayName"] for m in models] == ["ranker"]
    assert models[0]["artifactUri"] == "gs://demo-models/ranker"


def test_storage_buckets_delete_removes_an_empty_bucket_only(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    stored = emu.root / "gcs" / "demo-staging"
    (tmp_path / "model.txt").write_text("weights")
    ok(gcloud(emu, "storage", "buckets", "create", "gs://demo-staging", "--location=us-central1"))
    ok(gcloud(emu, "storage", "cp", str(tmp_path / "model.txt"), "gs://demo-staging/m/model.txt"))
    refused = gcloud(emu, "storage", "buckets", "delete", "gs://demo-staging")
    assert refused.returncode != 0 and "Bucket is not empty" in refused.stderr, refused.stderr
    assert (stored / "m" / "model.txt").read_text() == "weights", "the refusal changed nothing"
    ok(gcloud(emu, "storage", "rm", "gs://demo-staging/m/model.txt"))
    ok(gcloud(emu, "storage", "buckets", "delete", "gs://demo-staging"))
    assert not stored.exists()
    gone = gcloud(emu, "storage", "buckets", "delete", "gs://demo-staging")
    assert gone.returncode != 0 and "not found: 404" in gone.stderr, gone.stderr
    ok(gcloud(emu, "storage", "buckets", "create", "gs://demo-staging"))
    ok(gcloud(emu, "storage", "cp", str(tmp_path / "model.txt"), "gs://demo-staging/model.txt"))
    ok(gcloud(emu, "storage", "rm", "-r", "gs://demo-staging"))  # objects, then the bucket
    assert not stored.exists()


def test_models_versions_upload_list_describe_and_delete(emu: emulator.Emulator) -> None:
    """``gcloud ai models upload --parent-model --version-aliases``, ``list-version``,
    ``describe ID@ALIAS`` and ``delete-version``: the Model Registry's versions."""
    serving = "--container-image-uri=us-docker.pkg.dev/vertex-ai/prediction/sklearn-cpu.1-0:latest"
    upload = ("ai", "models", "upload", REGION, "--display-name=versioned", serving)
    ok(gcloud(emu, *upload, "--artifact-uri=gs://demo-models/v1", "--model-id=versioned"))
    ok(
        gcloud(
            emu,
            *upload,
            "--artifact-uri=gs://demo-models/v2",
            "--parent-model=projects/demo/locations/us-central1/models/versioned",
            "--version-aliases=challenger",
        )
    )
    listed = json.loads(
        ok(gcloud(emu, "ai", "models", "list-version", "versioned", REGION, "--format=json"))
    )
    assert [(v["versionId"], v.get("versionAliases")) for v in listed] == [
        ("1", ["default"]),
        ("2", ["challenger"]),
    ]
    described = json.loads(
        ok(gcloud(emu, "ai", "models", "describe", "versioned@challenger", REGION, "--format=json"))
    )
    assert described["artifactUri"] == "gs://demo-models/v2"
    ok(gcloud(emu, "ai", "models", "delete-version", "versioned@2", REGION, "--quiet"))
    listed = json.loads(
        ok(gcloud(emu, "ai", "models", "list-version", "versioned", REGION, "--format=json"))
    )
    assert [v["versionId"] for v in listed] == ["1"]


def test_an_api_the_emulator_does_not_serve_fails_at_once_naming_it(
    emu: emulator.Emulator,
) -> None:
    started = time.monotonic()
    refused = gcloud(emu, "pubsub", "topics", "create", "events")
    assert refused.returncode != 0
    assert "pubsub.googleapis.com is not served by the trainpool emulator" in refused.stderr
    assert time.monotonic() - started < 20, "no retries against Google's host"
    # gcloud shows a failed zone of an aggregated list as a warning, and the API by name
    listed = gcloud(emu, "compute", "instances", "list")
    assert "compute.googleapis.com is not served by the trainpool emulator" in listed.stderr


def test_the_token_gcloud_prints_is_the_doors_secret(emu: emulator.Emulator) -> None:
    printed = ok(gcloud(emu, "auth", "print-access-token")).strip()
    assert printed == (emu.root / "storage.token").read_text().strip()


def test_a_configuration_keeps_what_was_set_and_a_new_one_is_the_same_text(
    tmp_path: Path,
) -> None:
    # every replica gets a configuration of its own: a new one is written from the text made
    # once per door, which must be what the merge of an existing one gives (its properties
    # kept, the overrides pointed at the door given now)
    ca = tmp_path / "ca.pem"
    fresh = redirect_gcloud.configure(tmp_path / "a", "http://127.0.0.1:1", ca)
    merged = tmp_path / "b" / "configurations"
    merged.mkdir(parents=True)
    (merged / "config_default").write_text("")
    redirect_gcloud.configure(tmp_path / "b", "http://127.0.0.1:1", ca)
    text = (fresh / "configurations" / "config_default").read_text()
    assert (merged / "config_default").read_text() == text
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    apis = redirect_gcloud.apis()
    assert len(parser["api_endpoint_overrides"]) == len(apis) > 100
    assert parser["api_endpoint_overrides"]["ai"] == (
        "http://127.0.0.1:1/aiplatform.googleapis.com/"
    )
    assert parser["core"]["custom_ca_certs_file"] == str(ca)
    # `gcloud config set ai/region ...` in a replica, then a restart on another door
    with (fresh / "configurations" / "config_default").open("a") as handle:
        handle.write("[ai]\nregion = europe-west4\n")
    redirect_gcloud.configure(fresh, "http://127.0.0.1:2", ca)
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(fresh / "configurations" / "config_default")
    assert parser["ai"]["region"] == "europe-west4"
    assert parser["api_endpoint_overrides"]["ai"].startswith("http://127.0.0.1:2/")
    assert (fresh / "active_config").read_text() == "default"
