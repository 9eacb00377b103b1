"""Service Usage (``google.api.serviceusage.v1.ServiceUsage``) as Google's notebooks use it:
``gcloud services enable A B`` under ``trainpool exec``, then ``gcloud services list
--enabled`` and ``disable``; the official Python client over gRPC; a restart keeps what a
project enabled.

What Google's API does, from its reference
(https://cloud.google.com/service-usage/docs/reference/rest/v1/services): Enable, Disable
and BatchEnable answer an Operation whose response holds the Service(s) in their new state
(``EnableServiceResponse``, ``BatchEnableServicesResponse``); ListServices' filter is
``state:ENABLED`` or ``state:DISABLED`` (services/list); BatchEnable takes at most 20
services ("If more than 20 services are specified, the request will fail, and no state
changes will occur", services/batchEnable); GetService answers a service's state, DISABLED
until enabled (services/get).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from fixtures.shell import PROJECT, gcloud, needs_gcloud, ok
from google.api_core import exceptions
from google.cloud import service_usage_v1 as su
from google.cloud.service_usage_v1.services.service_usage.transports import (
    ServiceUsageGrpcTransport,
)

import trainpool.emulator as emulator

pytestmark = pytest.mark.timeout(120)
ENABLED = su.State.ENABLED
DISABLED = su.State.DISABLED


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path_factory.mktemp("service-usage") / "root") as running:
        yield running


def client(emu: emulator.Emulator) -> su.ServiceUsageClient:
    channel = grpc.insecure_channel(emu.address)
    return su.ServiceUsageClient(transport=ServiceUsageGrpcTransport(channel=channel))


@needs_gcloud
def test_gcloud_enables_lists_and_disables_services(emu: emulator.Emulator) -> None:
    # Two services: gcloud sends BatchEnable (POST v1/projects/demo/services:batchEnable);
    # the Operation is done, so gcloud returns without polling and prints nothing.
    services = ("artifactregistry.googleapis.com", "aiplatform.googleapis.com")
    done = gcloud(emu, "services", "enable", *services)
    assert ok(done) == "" and "ERROR" not in done.stderr
    ok(gcloud(emu, "services", "enable", "cloudbuild.googleapis.com"))  # one: EnableService

    # `--enabled` sends filter=state:ENABLED (gcloud's api_lib/services/serviceusage.py).
    names = ok(gcloud(emu, "services", "list", "--enabled", "--format=value(config.name)"))
    assert names.split() == [
        "aiplatform.googleapis.com",
        "artifactregistry.googleapis.com",
        "cloudbuild.googleapis.com",
    ]
    table = ok(gcloud(emu, "services", "list", "--enabled")).splitlines()
    assert table[0].split() == ["NAME", "TITLE"]
    assert table[1].split() == ["aiplatform.googleapis.com", "Vertex", "AI", "API"]
    assert table[2].split() == ["artifactregistry.googleapis.com", "Artifact", "Registry", "API"]
    listed = json.loads(ok(gcloud(emu, "services", "list", "--enabled", "--format=json")))
    assert listed[0] == {
        "config": {"name": "aiplatform.googleapis.com", "title": "Vertex AI API"},
        "name": f"projects/{PROJECT}/services/aiplatform.googleapis.com",
        "parent": f"projects/{PROJECT}",
        "state": "ENABLED",
    }

    done = gcloud(emu, "services", "disable", "cloudbuild.googleapis.com")
    assert ok(done) == "" and "ERROR" not in done.stderr
    names = ok(gcloud(emu, "services", "list", "--enabled", "--format=value(config.name)"))
    assert names.split() == ["aiplatform.googleapis.com", "artifactregistry.googleapis.com"]
    # --available (no filter): the services the emulator knows of, each in its state
    available = ok(gcloud(emu, "services", "list", "--available", "--format=json"))
    states = {s["config"]["name"]: s["state"] for s in json.loads(available)}
    assert states["cloudbuild.googleapis.com"] == "DISABLED"
    assert states["aiplatform.googleapis.com"] == "ENABLED"

    refused = gcloud(emu, "services", "enable", "aiplatform")
    assert refused.returncode == 1
    assert "INVALID_ARGUMENT: name: 'aiplatform' is not a service name" in refused.stderr
    assert "accepted: a Google API's service name" in refused.stderr


def test_the_python_client_over_grpc(emu: emulator.Emulator) -> None:
    api = client(emu)
    parent = "projects/grpc-project"

    def state_of(service_id: str) -> su.State:
        return api.get_service(request={"name": f"{parent}/services/{service_id}"}).state

    def listed(state: str) -> list[str]:
        found = api.list_services(request={"parent": parent, "filter": f"state:{state}"})
        return [s.config.name for s in found]

    storage = f"{parent}/services/storage.googleapis.com"
    assert state_of("storage.googleapis.com") == DISABLED
    operation = api.enable_service(request={"name": storage})
    assert operation.operation.done and operation.operation.name.startswith("operations/")
    response = operation.result(timeout=10)
    assert isinstance(response, su.EnableServiceResponse)
    assert response.service.name == storage
    assert response.service.state == ENABLED
    assert response.service.config.title == "Cloud Storage API"
    # the Operation is kept: google.longrunning.Operations answers it
    polled = api.transport.operations_client.get_operation(operation.operation.name)
    assert polled.done and polled.response == operation.operation.response

    ids = ["logging.googleapis.com", "compute.googleapis.com"]
    batch = api.batch_enable_services(request={"parent": parent, "service_ids": ids})
    assert [(s.config.name, s.state) for s in batch.result(timeout=10).services] == [
        ("logging.googleapis.com", ENABLED),
        ("compute.googleapis.com", ENABLED),
    ]
    names = [f"{parent}/services/logging.googleapis.com", f"{parent}/services/iam.googleapis.com"]
    got = api.batch_get_services(request={"parent": parent, "names": names})
    assert [s.state for s in got.services] == [ENABLED, DISABLED]

    too_many = [f"s{i}.googleapis.com" for i in range(21)]
    with pytest.raises(exceptions.InvalidArgument, match="accepted: 1 to 20 service names"):
        api.batch_enable_services(request={"parent": parent, "service_ids": too_many})
    assert state_of("s0.googleapis.com") == DISABLED  # "no state changes will occur"

    disabled = api.disable_service(request={"name": storage}).result(timeout=10)
    assert isinstance(disabled, su.DisableServiceResponse)
    assert disabled.service.state == DISABLED
    assert listed("ENABLED") == ["compute.googleapis.com", "logging.googleapis.com"]
    off = listed("DISABLED")
    assert "storage.googleapis.com" in off and "logging.googleapis.com" not in off
    with pytest.raises(exceptions.InvalidArgument, match="state:ENABLED, state:DISABLED"):
        listed("ON")
    with pytest.raises(exceptions.InvalidArgument, match="is not a project"):
        api.enable_service(request={"name": "folders/1/services/storage.googleapis.com"})


def test_enabled_services_survive_a_restart(tmp_path: Path) -> None:
    root = tmp_path / "root"
    name = "projects/kept/services/aiplatform.googleapis.com"
    with emulator.start(root) as first:
        client(first).enable_service(request={"name": name}).result(timeout=10)
    with emulator.start(root) as second:
        assert client(second).get_service(request={"name": name}).state == ENABLED
        request = {"parent": "projects/kept", "filter": "state:ENABLED"}
        assert [s.name for s in client(second).list_services(request=request)] == [name]
