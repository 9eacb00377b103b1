"""The standard methods (AIP-131..135) as one declared resource gets them, with records that
write down their calls: the order of the checks (parent or name, id, fields, then the records),
what reaches the records, what each verb answers with and without an Operation, and the
table's names and types. The services' own tests cover their records and their words."""

from __future__ import annotations

from typing import Any

import pytest
from google.cloud.aiplatform_v1.types import artifact as artifact_types
from google.cloud.aiplatform_v1.types import metadata_service as ms
from google.longrunning import operations_pb2
from google.protobuf import empty_pb2

from trainpool.emulator.records.kinds import ARTIFACTS, Kind
from trainpool.emulator.standard_methods import Resource, methods, snake

STORE = "projects/p/locations/us-central1/metadataStores/default"
NAME = f"{STORE}/artifacts/a1"


class Recorder:
    """Records, and the checks, that write down each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def check(self, what: str) -> Any:
        return lambda *args: self.calls.append((what, *args))

    def create(self, kind: Kind, parent: str, resource_id: str, resource: Any, field: str) -> Any:
        self.calls.append(("create", parent, resource_id, field))
        resource.name = f"{parent}/artifacts/{resource_id}"
        return resource

    def require(self, kind: Kind, name: str) -> Any:
        self.calls.append(("require", name))
        return artifact_types.Artifact(name=name)

    def page(self, kind: Kind, parent: str, **query: Any) -> tuple[list[Any], str]:
        self.calls.append(("page", parent, query))
        return [artifact_types.Artifact(name=NAME)], "1"

    def update(self, kind: Kind, resource: Any, request: Any) -> Any:
        self.calls.append(("update", resource.name))
        return resource

    def delete(self, kind: Kind, request: Any) -> None:
        self.calls.append(("delete", request.name))


def declared(recorder: Recorder, operations: tuple[str, ...] = ()) -> dict[str, Any]:
    resource = Resource(
        ARTIFACTS,
        recorder,
        recorder.check("parent"),
        recorder.check("name"),
        recorder.check("fields"),
        resource_id=recorder.check("id"),
        operations=operations,
    )

    def operation(name: str, response: Any) -> Any:
        recorder.calls.append(("operation", name, response is None))
        return operations_pb2.Operation(name=f"{name}/operations/1", done=True)

    return methods(ms, operation, resource)


def test_the_table_names_each_method_with_its_types() -> None:
    table = declared(Recorder(), operations=("Delete",))
    assert set(table) == {
        "CreateArtifact",
        "GetArtifact",
        "ListArtifacts",
        "UpdateArtifact",
        "DeleteArtifact",
    }
    assert table["ListArtifacts"][1:] == (ms.ListArtifactsRequest, ms.ListArtifactsResponse)
    assert table["CreateArtifact"][2] is artifact_types.Artifact
    assert table["DeleteArtifact"][2] is operations_pb2.Operation
    assert snake("TensorboardTimeSeries") == "tensorboard_time_series"


def test_create_checks_parent_then_id_then_fields_then_stores() -> None:
    recorder = Recorder()
    create = declared(recorder)["CreateArtifact"][0]
    request = ms.CreateArtifactRequest(parent=STORE, artifact_id="a1", artifact={})
    created = create(request)
    assert created.name == NAME
    assert [call[0] for call in recorder.calls] == ["parent", "id", "fields", "create"]
    assert recorder.calls[0][1:] == (STORE, "parent")
    assert recorder.calls[1][1:] == ("a1", "artifact_id")
    assert recorder.calls[2][2:] == ("artifact", True)
    assert recorder.calls[3] == ("create", STORE, "a1", "artifact_id")


def test_create_with_an_operation_answers_it_with_the_resource() -> None:
    recorder = Recorder()
    create = declared(recorder, operations=("Create",))["CreateArtifact"][0]
    answer = create(ms.CreateArtifactRequest(parent=STORE, artifact_id="a1"))
    assert answer.name == f"{NAME}/operations/1"
    assert recorder.calls[-1] == ("operation", NAME, False)


def test_list_gives_the_records_the_page_and_the_queries() -> None:
    recorder = Recorder()
    listing = declared(recorder)["ListArtifacts"][0]
    request = ms.ListArtifactsRequest(
        parent=STORE, page_size=5, page_token="2", filter='uri="x"', order_by="create_time"
    )
    response = listing(request)
    assert [a.name for a in response.artifacts] == [NAME]
    assert response.next_page_token == "1"
    assert recorder.calls[1] == (
        "page",
        STORE,
        {"page_size": 5, "page_token": "2", "filter": 'uri="x"', "order_by": "create_time"},
    )


def test_update_checks_the_resource_name_and_fields_then_stores() -> None:
    recorder = Recorder()
    update = declared(recorder)["UpdateArtifact"][0]
    update(ms.UpdateArtifactRequest(artifact={"name": NAME}))
    assert [call[0] for call in recorder.calls] == ["name", "fields", "update"]
    assert recorder.calls[0][1:] == (NAME, "artifact.name")
    assert recorder.calls[1][2:] == ("artifact", False)


def test_delete_answers_empty_or_a_done_operation() -> None:
    recorder = Recorder()
    plain = declared(recorder)["DeleteArtifact"][0]
    assert plain(ms.DeleteArtifactRequest(name=NAME)) == empty_pb2.Empty()
    assert recorder.calls == [("name", NAME, "name"), ("delete", NAME)]
    recorder = Recorder()
    with_operation = declared(recorder, operations=("Delete",))["DeleteArtifact"][0]
    assert with_operation(ms.DeleteArtifactRequest(name=NAME)).done
    assert recorder.calls[-1] == ("operation", NAME, True)


def test_operations_may_be_made_by_one_maker_per_verb() -> None:
    recorder = Recorder()
    resource = Resource(
        ARTIFACTS,
        recorder,
        recorder.check("parent"),
        recorder.check("name"),
        operations=("Create", "Delete"),
    )

    def maker(verb: str) -> Any:
        return lambda name, response: operations_pb2.Operation(name=f"{name}/operations/{verb}")

    table = methods(ms, {"Create": maker("create"), "Delete": maker("delete")}, resource)
    created = table["CreateArtifact"][0](ms.CreateArtifactRequest(parent=STORE, artifact_id="a1"))
    assert created.name == f"{NAME}/operations/create"
    deleted = table["DeleteArtifact"][0](ms.DeleteArtifactRequest(name=NAME))
    assert deleted.name == f"{NAME}/operations/delete"
    assert table["UpdateArtifact"][2] is artifact_types.Artifact
    with pytest.raises(KeyError):
        methods(ms, {"Create": maker("create")}, resource)
