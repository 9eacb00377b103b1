"""The REST door answers Vertex's HTTP/JSON API as Google's front end does.

The rules are Google's: routes from the methods' ``google.api.http`` rules (here checked
through the paths of the REST reference, https://cloud.google.com/vertex-ai/docs/reference/rest),
proto3's JSON mapping (camelCase, enums by name, ``int64`` as strings), query parameters for
non-body fields ("repeated fields can be represented as multiple query parameters", and a
``FieldMask`` as ``a,b``: google/api/http.proto), long-running operations at their own paths
with ``:wait`` (google/longrunning/operations.proto), and errors as
``{"error": {"code", "message", "status"}}`` with the HTTP status of the gRPC code
(google/rpc/code.proto, AIP-193).
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.jobs import wait_job
from fixtures.other_user import NOBODY, SYSTEM_PYTHON, as_another_user
from fixtures.pipelines import compile_fixture
from fixtures.processes import open_on
from fixtures.vertex import PARENT
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.emulator.records.database import READERS_KEPT
from trainpool.vertex.clients import job_client, schedule_client
from trainpool.vertex.pipelines import Target, build_pipeline_job, build_schedule

pytestmark = pytest.mark.timeout(120)
HOST = "us-central1-aiplatform.googleapis.com"
POOL = {
    "machineSpec": {"machineType": "n1-standard-4"},
    "replicaCount": "1",
    "containerSpec": {"imageUri": "python:3.11", "command": ["python3", "-c", "print(1)"]},
}


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path_factory.mktemp("rest") / "root") as running:
        yield running


def secret(emu: emulator.Emulator) -> str:
    return (emu.root / "storage.token").read_text().strip()


def call(
    emu: emulator.Emulator,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = "",
    raw: bytes | None = None,
    host: str = HOST,
) -> tuple[int, Any]:
    """``method`` on ``https://{host}{path}``, sent to the door as a client of it would."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(f"{emu.rest_address}/{host}{path}", data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token or secret(emu)}")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def error(answer: tuple[int, Any], status: int, code: str) -> str:
    got, body = answer
    assert got == status, body
    assert set(body) == {"error"} and body["error"]["code"] == status, body
    assert body["error"]["status"] == code, body
    return str(body["error"]["message"])


@pytest.fixture(scope="module")
def job(emu: emulator.Emulator) -> dict[str, Any]:
    status, made = call(
        emu,
        "POST",
        f"/v1/{PARENT}/customJobs",
        {
            "displayName": "over-rest",
            "labels": {"team": "a"},
            "jobSpec": {"workerPoolSpecs": [POOL]},
        },
    )
    assert status == 200, made
    return made


def test_a_job_made_over_rest_is_the_job_grpc_sees(
    emu: emulator.Emulator, job: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert job["name"].startswith(f"{PARENT}/customJobs/")
    assert job["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] == "1", "int64 as a string"
    assert job["state"].startswith("JOB_STATE_"), "enums by name"
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
    done = wait_job(job_client("us-central1").get_custom_job, job["name"], 60)
    assert done.state == JobState.JOB_STATE_SUCCEEDED and done.labels == {"team": "a"}
    status, got = call(emu, "GET", f"/v1/{job['name']}")
    assert status == 200 and got["state"] == "JOB_STATE_SUCCEEDED"
    status, as_ints = call(emu, "GET", f"/v1/{job['name']}?%24alt=json%3Benum-encoding%3Dint")
    assert as_ints["state"] == JobState.JOB_STATE_SUCCEEDED.value, "what the REST transports ask"
    status, listed = call(
        emu, "GET", f"/v1/{PARENT}/customJobs?filter=labels.team%3D%22a%22&pageSize=1"
    )
    assert status == 200 and [j["name"] for j in listed["customJobs"]] == [job["name"]]
    status, none = call(emu, "GET", f"/v1/{PARENT}/customJobs?filter=labels.team%3D%22b%22")
    assert status == 200 and none == {}, "an empty list is an empty object in proto3 JSON"


def test_v1beta1_paths_reach_the_same_jobs_and_refuse_what_v1_lacks(
    emu: emulator.Emulator, job: dict[str, Any]
) -> None:
    status, beta = call(emu, "GET", f"/v1beta1/{job['name']}")
    assert status == 200 and beta["name"] == job["name"] and beta["displayName"] == "over-rest"
    sweep = {
        "displayName": "beta",
        "maxTrialCount": 1,
        "parallelTrialCount": 1,
        "studySpec": {
            "metrics": [{"metricId": "m", "goal": "MAXIMIZE"}],
            "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}],
            "transferLearningConfig": {"disableTransferLearning": True},
        },
        "trialJobSpec": {"workerPoolSpecs": [POOL]},
    }
    message = error(
        call(emu, "POST", f"/v1beta1/{PARENT}/hyperparameterTuningJobs", sweep),
        400,
        "INVALID_ARGUMENT",
    )
    assert "hyperparameter_tuning_job.study_spec.transfer_learning_config" in message
    assert "v1beta1 field that v1 does not have" in message


def test_operations_are_kept_and_polled_at_their_own_paths(
    emu: emulator.Emulator, job: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
    wait_job(job_client("us-central1").get_custom_job, job["name"], 60)
    status, operation = call(emu, "DELETE", f"/v1/{job['name']}")
    assert status == 200 and operation["done"] is True, operation
    assert operation["name"].startswith(f"{job['name']}/operations/")
    assert call(emu, "GET", f"/v1/{operation['name']}") == (200, operation)
    assert call(emu, "POST", f"/v1/{operation['name']}:wait", {}) == (200, operation)
    status, listed = call(emu, "GET", f"/v1/{job['name']}/operations")
    assert status == 200 and listed["operations"] == [operation]
    error(call(emu, "GET", f"/v1/{job['name']}"), 404, "NOT_FOUND")
    error(call(emu, "GET", f"/v1/{PARENT}/operations/424242"), 404, "NOT_FOUND")


def test_errors_carry_the_status_of_their_code(emu: emulator.Emulator) -> None:
    missing = error(
        call(emu, "POST", f"/v1/{PARENT}/customJobs/999999:cancel", {}), 404, "NOT_FOUND"
    )
    assert f"{PARENT}/customJobs/999999" in missing
    status, made = call(
        emu,
        "POST",
        f"/v1/{PARENT}/customJobs",
        {"displayName": "x", "jobSpec": {"workerPoolSpecs": [POOL]}},
    )
    name = made["name"]
    for _ in range(600):
        if call(emu, "GET", f"/v1/{name}")[1]["state"] == "JOB_STATE_SUCCEEDED":
            break
    finished = error(call(emu, "POST", f"/v1/{name}:cancel", {}), 400, "FAILED_PRECONDITION")
    assert "already in state JOB_STATE_SUCCEEDED" in finished
    bad_pool = {**POOL, "machineSpec": {"machineType": "n1-standard-4", "acceleratorCount": 3}}
    rule = error(
        call(
            emu,
            "POST",
            f"/v1/{PARENT}/customJobs",
            {"displayName": "x", "jobSpec": {"workerPoolSpecs": [bad_pool]}},
        ),
        400,
        "INVALID_ARGUMENT",
    )
    assert "custom_job.job_spec.workerPoolSpecs[0].machineSpec" in rule, (
        "the planner's rule, one place"
    )


@pytest.mark.parametrize(
    ("raw", "path", "said"),
    [
        (b"{not json", "/v1/{parent}/customJobs", "Invalid JSON payload received"),
        (b"[1, 2]", "/v1/{parent}/customJobs", "Expected an object"),
        (
            b'{"displayName": "x", "jobSpec": {"wrkerPoolSpecs": []}}',
            "/v1/{parent}/customJobs",
            "wrkerPoolSpecs",
        ),
        (b'{"displayName": 7}', "/v1/{parent}/customJobs", "displayName"),
        (b'{"name": "x"}', "/v1/{parent}/customJobs?pageSiz=3", "pageSiz"),
        (b"", "/v1/{parent}/customJobs?pageSize=many", "pageSize"),
        (b"", "/v1/{parent}/customJobs?pageSize=-1", "page_size"),
        ("é".encode("latin-1"), "/v1/{parent}/customJobs", "Invalid JSON payload received"),
    ],
)
def test_a_malformed_request_is_refused_naming_what_is_wrong(
    emu: emulator.Emulator, raw: bytes, path: str, said: str
) -> None:
    method = "POST" if raw else "GET"
    message = error(
        call(emu, method, path.format(parent=PARENT), raw=raw or None), 400, "INVALID_ARGUMENT"
    )
    assert said in message, message
    assert "Traceback" not in message


def test_what_no_client_would_send_is_refused_too(emu: emulator.Emulator) -> None:
    """What the official REST clients refuse to send, sent raw: a Duration beyond
    protobuf's range, and ``..`` in a resource name."""
    job = {
        "displayName": "never-made",
        "jobSpec": {"workerPoolSpecs": [POOL], "scheduling": {"timeout": "1000000000000000s"}},
    }
    message = error(call(emu, "POST", f"/v1/{PARENT}/customJobs", job), 400, "INVALID_ARGUMENT")
    assert "timeout" in message
    dots = call(emu, "GET", "/v1/projects/../locations/us-central1/customJobs")
    assert dots[0] in (400, 404) and "error" in dots[1]
    dots = call(emu, "GET", f"/v1/{PARENT}/customJobs/..")
    assert dots[0] in (400, 404) and "error" in dots[1]
    never = "display_name%3D%22never-made%22"
    status, listed = call(emu, "GET", f"/v1/{PARENT}/customJobs?filter={never}")
    assert status == 200 and listed == {}, "nothing was created"


def test_a_too_large_body_is_refused_before_it_is_read(emu: emulator.Emulator) -> None:
    host, port = emu.rest_address.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.putrequest("POST", f"/{HOST}/v1/{PARENT}/customJobs")
    connection.putheader("Authorization", f"Bearer {secret(emu)}")
    connection.putheader("Content-Length", str(10 * 1024 * 1024 + 1))
    connection.endheaders()  # no body sent: the answer comes before it is read
    answer = connection.getresponse()
    body = json.loads(answer.read())
    assert answer.status == 413 and "at most" in body["error"]["message"], body


def _read_answer(reader: Any) -> tuple[int, Any]:
    """One HTTP answer from ``reader``: its status and JSON body (``Content-Length``)."""
    status, length = int(reader.readline().split()[1]), 0
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        length = int(value) if name.lower() == "content-length" else length
    return status, json.loads(reader.read(length))


def test_a_client_that_expects_100_continue_is_told_at_once(emu: emulator.Emulator) -> None:
    """``Expect: 100-continue`` (curl's on large bodies): the interim answer comes before the
    body is sent, though the door gathers an answer's head and body into one write; the
    answers of one connection then follow each other whole."""
    host, port = emu.rest_address.removeprefix("http://").split(":")
    body = json.dumps({"displayName": "expects", "jobSpec": {"workerPoolSpecs": [POOL]}})
    auth = f"Host: {HOST}\r\nAuthorization: Bearer {secret(emu)}\r\n"
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            f"POST /{HOST}/v1/{PARENT}/customJobs HTTP/1.1\r\n{auth}Content-Length: "
            f"{len(body)}\r\nExpect: 100-continue\r\n\r\n".encode()
        )
        interim = sock.recv(1024)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n", interim
        sock.sendall(body.encode())
        reader = sock.makefile("rb")
        status, made = _read_answer(reader)
        assert status == 200 and made["displayName"] == "expects", made
        sock.sendall(f"GET /{HOST}/v1/{made['name']} HTTP/1.1\r\n{auth}\r\n".encode())
        sock.sendall(f"GET /{HOST}/v1/{PARENT}/customJobs/0 HTTP/1.1\r\n{auth}\r\n".encode())
        status, got = _read_answer(reader)
        assert status == 200 and got["name"] == made["name"], got
        assert _read_answer(reader)[0] == 404


def test_an_update_mask_in_the_query_changes_only_what_it_names(
    emu: emulator.Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``PATCH .../schedules/ID?updateMask=displayName`` (a FieldMask as a query parameter,
    ``a,b`` in JSON: https://protobuf.dev/programming-guides/json/)."""
    target = Target("demo", "us-central1", "gs://demo-bucket/root")
    _, job = build_pipeline_job(compile_fixture("tiny", tmp_path), target, {"pause": 0.0})
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
    schedule = schedule_client("us-central1").create_schedule(
        parent=PARENT, schedule=build_schedule(job, target, "0 3 * * *", "nightly")
    )
    status, updated = call(
        emu,
        "PATCH",
        f"/v1/{schedule.name}?updateMask=displayName",
        {"displayName": "renamed", "cron": "0 4 * * *"},
    )
    assert status == 200, updated
    assert updated["displayName"] == "renamed" and updated["cron"] == "0 3 * * *"
    refused = error(
        call(emu, "PATCH", f"/v1/{schedule.name}?updateMask=nosuchField", {"displayName": "x"}),
        400,
        "INVALID_ARGUMENT",
    )
    assert "nosuchField" in refused or "no_such_field" in refused or "update_mask" in refused, (
        refused
    )
    status, still = call(emu, "GET", f"/v1/{schedule.name}")
    assert still["displayName"] == "renamed", "a refused update changes nothing"


def test_a_read_mask_lists_only_the_fields_it_names_on_every_door(
    emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``read_mask`` on a List request: "Mask specifying which fields to read"
    (ListCustomJobsRequest, google/cloud/aiplatform/v1/job_service.proto): the rest are unset."""
    body = {
        "displayName": "masked",
        "labels": {"team": "m"},
        "jobSpec": {"workerPoolSpecs": [POOL]},
    }
    status, job = call(emu, "POST", f"/v1/{PARENT}/customJobs", body)
    assert status == 200, job
    mask = "filter=labels.team%3D%22m%22&readMask=name,displayName"
    status, listed = call(emu, "GET", f"/v1/{PARENT}/customJobs?{mask}")
    assert status == 200, listed
    assert listed["customJobs"] == [{"name": job["name"], "displayName": "masked"}]
    mask = "filter=labels.team%3D%22m%22&readMask=jobSpec.workerPoolSpecs"
    status, nested = call(emu, "GET", f"/v1/{PARENT}/customJobs?{mask}")
    disk = {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100}  # Vertex's defaults, filled
    stored = {**POOL, "diskSpec": disk}
    assert nested["customJobs"] == [{"jobSpec": {"workerPoolSpecs": [stored]}}], "a field's field"
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
    client = job_client("us-central1")
    masked = client.list_custom_jobs(
        request={"parent": PARENT, "read_mask": {"paths": ["display_name", "labels"]}}
    )
    found = [j for j in masked if j.display_name == "masked"]
    assert found and all(j.labels == {"team": "m"} for j in found)
    assert all(not j.name and not j.job_spec.worker_pool_specs for j in found)
    assert all(j.state == JobState.JOB_STATE_UNSPECIFIED for j in found)
    full = [j for j in client.list_custom_jobs(parent=PARENT) if j.display_name == "masked"]
    assert full and all(j.name and j.job_spec.worker_pool_specs for j in full), "none: all"
    refused = error(
        call(emu, "GET", f"/v1/{PARENT}/customJobs?readMask=displayName,noSuchField"),
        400,
        "INVALID_ARGUMENT",
    )
    assert refused.startswith("read_mask: no_such_field is not a field of CustomJob; accepted:")


def test_what_is_not_emulated_answers_at_once_naming_it(emu: emulator.Emulator) -> None:
    batch = error(call(emu, "POST", f"/v1/{PARENT}/batchPredictionJobs", {}), 501, "UNIMPLEMENTED")
    assert (
        "JobService.CreateBatchPredictionJob" in batch
        and "serves other methods of JobService" in batch
    )
    endpoints = error(call(emu, "GET", f"/v1/{PARENT}/endpoints/1"), 501, "UNIMPLEMENTED")
    assert "google.cloud.aiplatform.v1.EndpointService is not served" in endpoints
    compute = error(
        call(emu, "GET", "/compute/v1/projects/demo/zones", host="compute.googleapis.com"),
        403,
        "PERMISSION_DENIED",
    )
    assert "compute.googleapis.com is not served by the trainpool emulator" in compute
    status, body = call(
        emu, "GET", "/compute/v1/projects/demo/zones", host="compute.googleapis.com"
    )
    assert body["error"]["details"][0]["reason"] == "SERVICE_DISABLED", "what Google answers"
    error(call(emu, "GET", f"/v1/{PARENT}/nothingHere"), 404, "NOT_FOUND")


def test_only_the_secret_opens_the_door(emu: emulator.Emulator) -> None:
    for token in (None, "guess", secret(emu)[:-1]):
        message = error(
            call(emu, "GET", f"/v1/{PARENT}/customJobs", token=token), 403, "PERMISSION_DENIED"
        )
        assert "serves its owner only" in message
    url = f"{emu.rest_address}/{secret(emu)}/{HOST}/v1/{PARENT}/customJobs"
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.status == 200, "the secret as the path's first segment"


PROBE = """
import http.client, ssl, sys, urllib.request, urllib.error
door, token_file, proxy = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    open(token_file).read()
    print("READ")
except OSError:
    print("NOREAD")
try:
    host = "/us-central1-aiplatform.googleapis.com"
    urllib.request.urlopen(door + host + "/v1/projects/p/locations/us-central1/customJobs")
    print("IN")
except urllib.error.HTTPError as err:
    print("DOOR", err.code)
host, port = proxy.removeprefix("http://").split(":")
tunnel = http.client.HTTPSConnection(
    host, int(port), context=ssl._create_unverified_context(), timeout=30
)
tunnel.set_tunnel("us-central1-aiplatform.googleapis.com", 443)
tunnel.request("GET", "/v1/projects/p/locations/us-central1/customJobs")
print("PROXY", tunnel.getresponse().status)
"""


@as_another_user
def test_another_local_user_cannot_use_the_door(emu: emulator.Emulator) -> None:
    probe = subprocess.run(
        [
            *NOBODY,
            SYSTEM_PYTHON,
            "-I",
            "-c",
            PROBE,
            str(emu.rest_address),
            str(emu.root / "storage.token"),
            str(emu.proxy_address),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["NOREAD", "DOOR", "403", "PROXY", "403"], (
        "the proxy carries requests, and gives nothing away without the secret"
    )


def test_connections_that_come_and_go_leave_nothing_open(emu: emulator.Emulator) -> None:
    """Each connection is served by a thread of its own, which ends with it (gcloud opens new
    ones every command): the records' connections open after 150 of them, each one List, are
    those kept for the next reads, not one a connection (two descriptors each, until a
    long-lived emulator had none left)."""
    for _ in range(150):
        assert call(emu, "GET", f"/v1/{PARENT}/customJobs?pageSize=1")[0] == 200
    assert open_on(emu.root / "emulator.sqlite") <= READERS_KEPT + 2
