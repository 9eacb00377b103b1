"""Clients that build Google's URLs themselves reach the emulator through its HTTPS proxy,
under ``trainpool exec``'s environment, unchanged: curl as the REST reference writes it,
gsutil, the Vertex AI SDK and the gapic clients on their REST transport. Google hosts the
emulator does not serve are refused by name; other hosts pass through.
"""

from __future__ import annotations

import json
import shutil
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from fixtures.shell import GSUTIL, exec_env, ok, run
from fixtures.vertex import PARENT

import trainpool.emulator as emulator

pytestmark = pytest.mark.timeout(240)
CURL = shutil.which("curl")
needs_curl = pytest.mark.skipif(CURL is None, reason="curl is not installed")
needs_gsutil = pytest.mark.skipif(
    GSUTIL is None, reason="gsutil (Google Cloud CLI) is not installed"
)


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path_factory.mktemp("https") / "root") as running:
        yield running


@needs_curl
def test_curl_as_the_rest_reference_writes_it(emu: emulator.Emulator, tmp_path: Path) -> None:
    # The "REST" tab of "Create a custom training job"
    # (https://cloud.google.com/vertex-ai/docs/training/create-custom-job): the request body
    # in request.json, a gcloud token, the regional host.
    (tmp_path / "request.json").write_text(
        json.dumps(
            {
                "displayName": "from-curl",
                "jobSpec": {
                    "workerPoolSpecs": [
                        {
                            "machineSpec": {"machineType": "n1-standard-4"},
                            "replicaCount": 1,
                            "containerSpec": {"imageUri": "python:3.11", "command": ["true"]},
                        }
                    ]
                },
            }
        )
    )
    script = (
        'curl -sS -X POST -H "Authorization: Bearer $(gcloud auth print-access-token)" '
        '-H "Content-Type: application/json; charset=utf-8" -d @request.json '
        f'"https://us-central1-aiplatform.googleapis.com/v1/{PARENT}/customJobs"'
    )
    created = json.loads(ok(run(emu, ["sh", "-c", script], cwd=tmp_path)))
    assert created["displayName"] == "from-curl" and created["name"].startswith(PARENT)
    listed = json.loads(
        ok(
            run(
                emu,
                [
                    "sh",
                    "-c",
                    'curl -sS -H "Authorization: Bearer $(gcloud auth print-access-token)" '
                    f'"https://us-central1-aiplatform.googleapis.com/v1/{PARENT}/customJobs"',
                ],
            )
        )
    )
    assert [j["name"] for j in listed["customJobs"]] == [created["name"]]


@needs_curl
def test_google_hosts_the_emulator_does_not_serve_are_refused_by_name(
    emu: emulator.Emulator,
) -> None:
    other = run(emu, ["curl", "-sS", "https://www.google.com/"])
    assert other.returncode != 0 and "CONNECT tunnel failed, response 403" in other.stderr
    compute = run(
        emu,
        [
            "curl",
            "-sS",
            "-H",
            "Authorization: Bearer x",
            "https://compute.googleapis.com/compute/v1/projects/demo/zones",
        ],
    )
    assert json.loads(compute.stdout)["error"]["code"] == 403


def test_other_hosts_pass_through_the_proxy(emu: emulator.Emulator) -> None:
    class Echo(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            self.wfile.write(self.rfile.readline().upper())

    with socketserver.TCPServer(("127.0.0.1", 0), Echo) as echo:
        threading.Thread(target=echo.serve_forever, daemon=True).start()
        port = echo.server_address[1]
        host, proxy_port = (emu.proxy_address or "").removeprefix("http://").split(":")
        with socket.create_connection((host, int(proxy_port)), timeout=10) as sock:
            sock.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            reader = sock.makefile("rb")
            assert reader.readline().startswith(b"HTTP/1.1 200")
            assert reader.readline() == b"\r\n"
            sock.sendall(b"through\n")
            assert reader.readline() == b"THROUGH\n"
        echo.shutdown()


@needs_gsutil
def test_gsutil_makes_copies_lists_reads_and_removes_objects_and_buckets(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    (tmp_path / "custom.tar.gz").write_bytes(b"trainer package")
    script = (
        "set -e; gsutil mb -l us-central1 gs://demo-notebook; "
        "gsutil cp custom.tar.gz gs://demo-notebook/trainer/custom.tar.gz; "
        "gsutil ls gs://demo-notebook/trainer; gsutil cat gs://demo-notebook/trainer/custom.tar.gz"
    )
    out = ok(run(emu, ["sh", "-c", script], cwd=tmp_path))
    assert "gs://demo-notebook/trainer/custom.tar.gz" in out and out.endswith("trainer package")
    stored = emu.root / "gcs" / "demo-notebook" / "trainer" / "custom.tar.gz"
    assert stored.read_bytes() == b"trainer package", "the object is in the store"
    refused = run(emu, ["gsutil", "rb", "gs://demo-notebook"])
    assert refused.returncode != 0 and "409 BucketNotEmpty" in refused.stderr, refused.stderr
    assert stored.read_bytes() == b"trainer package", "the refusal changed nothing"
    ok(run(emu, ["gsutil", "rm", "gs://demo-notebook/trainer/custom.tar.gz"]))
    assert not stored.exists()
    ok(run(emu, ["gsutil", "rb", "gs://demo-notebook"]))
    assert not (emu.root / "gcs" / "demo-notebook").exists()


SDK_ON_REST = f"""
from google.cloud import aiplatform, aiplatform_v1
aiplatform.init(project="demo", location="us-central1", api_transport="rest",
                staging_bucket="gs://demo-staging")
job = aiplatform.CustomJob(display_name="sdk-rest", worker_pool_specs=[{{
    "machine_spec": {{"machine_type": "n1-standard-4"}}, "replica_count": 1,
    "container_spec": {{"image_uri": "python:3.11", "command": ["python3", "-c", "print(1)"]}}}}])
job.run(sync=True)
print("TRANSPORT", type(job.api_client._transport).__name__, job.state.name)
client = aiplatform_v1.JobServiceClient(transport="rest",
    client_options={{"api_endpoint": "us-central1-aiplatform.googleapis.com"}})
print("LISTED", sorted(j.display_name for j in client.list_custom_jobs(parent="{PARENT}")))
"""


def test_the_sdk_and_the_gapic_clients_on_rest(emu: emulator.Emulator) -> None:
    out = ok(run(emu, [sys.executable, "-c", SDK_ON_REST], timeout=180))
    assert "TRANSPORT JobServiceRestTransport JOB_STATE_SUCCEEDED" in out, out
    assert "sdk-rest" in out.split("LISTED", 1)[1]


def test_the_authority_vouches_for_googleapis_only_and_its_key_stays_in_memory(
    emu: emulator.Emulator,
) -> None:
    env = exec_env(emu)
    bundle = Path(env["SSL_CERT_FILE"]).read_bytes()
    last = b"-----BEGIN CERTIFICATE-----" + bundle.rsplit(b"-----BEGIN CERTIFICATE-----", 1)[1]
    authority = x509.load_pem_x509_certificate(last)
    assert authority.subject.rfc4514_string().startswith("CN=trainpool emulator CA")
    constraints = authority.extensions.get_extension_for_class(x509.NameConstraints)
    assert constraints.critical
    assert constraints.value.permitted_subtrees == [x509.DNSName("googleapis.com")]
    keys = [
        p for p in emu.root.rglob("*") if p.is_file() and b"PRIVATE KEY" in p.read_bytes()[:4096]
    ]
    assert keys == []
    for name in (
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "HTTPLIB2_CA_CERTS",
        "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE",
    ):
        assert env[name] == env["SSL_CERT_FILE"]
    assert env["HTTPS_PROXY"] == emu.proxy_address and "127.0.0.1" in env["NO_PROXY"].split(",")
    assert subprocess.run(["true"], env=env, check=False).returncode == 0
