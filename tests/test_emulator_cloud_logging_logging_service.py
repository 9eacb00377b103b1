"""A training job's logs read the ways Vertex users read them: google-cloud-logging's
``list_entries`` and ``tail_entries`` (gRPC), ``gcloud ai custom-jobs stream-logs`` and
``gcloud logging read`` (REST), and the REST API itself.

What Vertex writes, and the sources for it, are in
``trainpool/emulator/cloud_logging/entries.py``: one entry per line of a replica's
output, ``resource.type="ml_job"`` with ``job_id``, ``project_id`` and ``task_name``, the
line in ``jsonPayload.message``, severity INFO for standard output and ERROR for standard
error; the service's own messages under the task ``service``.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.jobs import wait_job
from fixtures.shell import gcloud as gcloud_in
from fixtures.shell import needs_gcloud, ok
from google.cloud import aiplatform_v1
from google.cloud import logging as cloud_logging
from google.cloud.aiplatform_v1.types.job_state import JobState
from google.cloud.logging_v2.services.logging_service_v2 import LoggingServiceV2Client
from google.cloud.logging_v2.types import TailLogEntriesRequest

from trainpool.testing import emulated_vertex

pytestmark = pytest.mark.timeout(180)
PROJECT = "test-project"
PARENT = f"projects/{PROJECT}/locations/us-central1"
SCRIPT = """
import json, os, sys
task = json.loads(os.environ["CLUSTER_SPEC"])["task"]
name = f"{task['type']}-{task['index']}"
for step in range(3):
    print(f"{name} step {step}", flush=True)
print(f"{name} warned", file=sys.stderr, flush=True)
"""


def pool(count: int = 1) -> dict[str, Any]:
    return {
        "machine_spec": {"machine_type": "n1-standard-4"},
        "replica_count": count,
        "container_spec": {"image_uri": "python:3.11", "command": ["python3", "-c", SCRIPT]},
    }


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with emulated_vertex(tmp_path_factory.mktemp("logging") / "root", project=PROJECT) as running:
        yield running


@pytest.fixture(scope="module")
def jobs(emu: Any) -> aiplatform_v1.JobServiceClient:
    return aiplatform_v1.JobServiceClient(
        client_options={"api_endpoint": "us-central1-aiplatform.googleapis.com"}
    )


@pytest.fixture(scope="module")
def job_id(jobs: aiplatform_v1.JobServiceClient) -> str:
    job = jobs.create_custom_job(
        parent=PARENT,
        custom_job={"display_name": "logs", "job_spec": {"worker_pool_specs": [pool(), pool()]}},
    )
    assert wait_job(jobs.get_custom_job, job.name, 120).state == JobState.JOB_STATE_SUCCEEDED
    return job.name.rsplit("/", 1)[1]


def gcloud(emu: Any, *args: str) -> Any:
    return gcloud_in(emu, *args, project=PROJECT)


def job_filter(job_id: str) -> str:
    return f'resource.type="ml_job" AND resource.labels.job_id="{job_id}"'


def test_every_line_of_every_replica_is_an_entry_as_vertex_writes_it(emu: Any, job_id: str) -> None:
    client = cloud_logging.Client(project=PROJECT)
    found = list(client.list_entries(filter_=job_filter(job_id), order_by=cloud_logging.ASCENDING))
    lines = [
        (e.resource.labels["task_name"], e.severity, e.payload["message"])
        for e in found
        if e.resource.labels["task_name"] != "service"
    ]
    assert sorted(lines) == sorted(
        [
            (f"workerpool{p}-0", "INFO", f"{role}-0 step {s}")
            for p, role in ((0, "workerpool0"), (1, "workerpool1"))
            for s in range(3)
        ]
        + [
            ("workerpool0-0", "ERROR", "workerpool0-0 warned"),
            ("workerpool1-0", "ERROR", "workerpool1-0 warned"),
        ]
    )
    first = next(e for e in found if e.resource.labels["task_name"] == "workerpool1-0")
    assert first.resource.type == "ml_job"
    assert first.resource.labels == {
        "job_id": job_id,
        "project_id": PROJECT,
        "task_name": "workerpool1-0",
    }
    assert first.log_name == f"projects/{PROJECT}/logs/workerpool1-0"
    assert first.payload["levelname"] == "INFO" and first.payload["attrs"] == {
        "tag": "workerpool1-0"
    }
    stamps = [e.timestamp for e in found]
    assert stamps == sorted(stamps), "ascending by timestamp, as asked"
    steps = [m for t, _, m in lines if t == "workerpool0-0" and "step" in m]
    assert steps == [f"workerpool0-0 step {s}" for s in range(3)], "a replica's lines in order"
    service = [e.payload["message"] for e in found if e.resource.labels["task_name"] == "service"]
    assert any("SUCCEEDED" in m for m in service), service


def test_a_query_narrows_by_severity_and_task(emu: Any, job_id: str) -> None:
    client = cloud_logging.Client(project=PROJECT)
    task = 'resource.labels.task_name="workerpool1-0"'
    errors = client.list_entries(filter_=f"{job_filter(job_id)} AND severity>=ERROR AND {task}")
    assert [e.payload["message"] for e in errors] == ["workerpool1-0 warned"]
    newest = next(
        iter(client.list_entries(filter_=job_filter(job_id), order_by=cloud_logging.DESCENDING))
    )
    assert newest.resource.labels["task_name"] == "service", "the job's end is its last entry"


def rest(emu: Any, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    token = Path(emu.root / "storage.token").read_text().strip()
    request = urllib.request.Request(
        f"{emu.rest_address}/logging.googleapis.com/v2/entries:list",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_rest_pages_through_entries_in_order_and_refuses_a_bad_query(emu: Any, job_id: str) -> None:
    body = {"resourceNames": [f"projects/{PROJECT}"], "filter": job_filter(job_id), "pageSize": 3}
    seen: list[str] = []
    token = ""
    for _ in range(20):
        status, page = rest(emu, {**body, "pageToken": token} if token else body)
        assert status == 200, page
        assert len(page["entries"]) <= 3
        seen += [e["insertId"] for e in page["entries"]]
        token = page.get("nextPageToken", "")
        if not token:
            break
    status, whole = rest(emu, {**body, "pageSize": 1000})
    assert seen == [e["insertId"] for e in whole["entries"]] and len(set(seen)) == len(seen)
    status, newest_first = rest(emu, {**body, "pageSize": 1000, "orderBy": "timestamp desc"})
    assert [e["insertId"] for e in newest_first["entries"]] == seen[::-1]
    status, refused = rest(emu, {**body, "filter": "severity>=LOUD"})
    assert status == 400 and refused["error"]["status"] == "INVALID_ARGUMENT"
    assert "filter: severity 'LOUD'" in refused["error"]["message"]
    status, refused = rest(emu, {**body, "pageSize": 1001})
    assert status == 400 and "page_size" in refused["error"]["message"]
    status, refused = rest(emu, {"filter": job_filter(job_id)})
    assert status == 400 and "resource_names" in refused["error"]["message"]


def test_a_tail_streams_the_lines_of_a_job_that_starts_after_it(
    emu: Any, jobs: aiplatform_v1.JobServiceClient
) -> None:
    tail = LoggingServiceV2Client()  # what google-cloud-logging's docs tail with
    got: list[str] = []
    stop = threading.Event()

    def follow() -> None:
        request = TailLogEntriesRequest(
            resource_names=[f"projects/{PROJECT}"], filter='resource.type="ml_job" severity>=ERROR'
        )
        for response in tail.tail_log_entries(requests=iter([request])):
            got.extend(entry.json_payload["message"] for entry in response.entries)
            if stop.is_set() or got:
                return

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    time.sleep(1.0)
    job = jobs.create_custom_job(
        parent=PARENT,
        custom_job={"display_name": "tailed", "job_spec": {"worker_pool_specs": [pool()]}},
    )
    wait_job(jobs.get_custom_job, job.name, 120)
    reader.join(timeout=30)
    stop.set()
    assert got == ["workerpool0-0 warned"]


@needs_gcloud
def test_gcloud_stream_logs_and_logging_read_show_the_job(emu: Any, job_id: str) -> None:
    streamed = ok(
        gcloud(
            emu,
            "ai",
            "custom-jobs",
            "stream-logs",
            job_id,
            "--region=us-central1",
            "--polling-interval=1",
        )
    )
    rows = [line.split("\t") for line in streamed.splitlines() if "\t" in line]
    shown = {(row[0], row[2], row[3]) for row in rows}
    assert ("INFO", "workerpool1-0", "workerpool1-0 step 2") in shown
    assert ("ERROR", "workerpool0-0", "workerpool0-0 warned") in shown
    read = json.loads(
        ok(
            gcloud(
                emu, "logging", "read", f"{job_filter(job_id)} AND severity>=ERROR", "--format=json"
            )
        )
    )
    assert sorted(e["jsonPayload"]["message"] for e in read) == [
        "workerpool0-0 warned",
        "workerpool1-0 warned",
    ]
    assert {e["resource"]["labels"]["job_id"] for e in read} == {job_id}
