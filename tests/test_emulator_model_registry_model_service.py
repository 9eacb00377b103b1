"""The emulator's Model Registry keeps versions and aliases as Vertex does, over gRPC and REST,
v1 and v1beta1, with the SDK's ``Model.upload(parent_model=...)`` and ``ModelRegistry`` as
Google's notebooks call them.

The rules and their sources are in trainpool/emulator/model_registry/models.py (model.proto,
model_service.proto, https://cloud.google.com/vertex-ai/docs/model-registry/model-alias).
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.api_core import exceptions
from google.cloud import aiplatform, aiplatform_v1, aiplatform_v1beta1
from google.cloud.aiplatform.models import ModelRegistry
from google.protobuf import field_mask_pb2

import trainpool.emulator as emulator
from trainpool.testing import emulated_vertex
from trainpool.vertex import clients

pytestmark = pytest.mark.timeout(120)

PROJECT, LOCATION = "demo", "us-central1"
PARENT = f"projects/{PROJECT}/locations/{LOCATION}"
IMAGE = "us-docker.pkg.dev/vertex-ai/prediction/sklearn-cpu.1-0:latest"
HOST = f"{LOCATION}-aiplatform.googleapis.com"


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulator.Emulator]:
    with emulated_vertex(tmp_path_factory.mktemp("models") / "root", PROJECT) as running:
        yield running


def client() -> Any:
    return clients.model_client(LOCATION)


def upload(display_name: str = "m", **fields: Any) -> tuple[str, str]:
    """UploadModel over gRPC; (the Model's name, the version id)."""
    model = aiplatform_v1.Model(
        display_name=display_name,
        artifact_uri="gs://bkt/model",
        version_aliases=fields.pop("version_aliases", []),
        version_description=fields.pop("version_description", ""),
    )
    request = aiplatform_v1.UploadModelRequest(parent=PARENT, model=model, **fields)
    answer = client().upload_model(request=request).result(timeout=30)
    return answer.model, answer.model_version_id


def aliases(name: str) -> dict[str, list[str]]:
    """version id -> its aliases, sorted, from ListModelVersions."""
    return {
        v.version_id: sorted(v.version_aliases) for v in client().list_model_versions(name=name)
    }


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_the_sdk_keeps_versions_and_aliases_as_googles_notebooks_use_them(
    emu: emulator.Emulator, transport: str
) -> None:
    aiplatform.init(project=PROJECT, location=LOCATION, api_transport=transport)
    blessed = aiplatform.Model.upload(
        display_name=f"churn-{transport}",
        artifact_uri="gs://bkt/v1",
        serving_container_image_uri=IMAGE,
        version_aliases=["blessed"],
        version_description="first night",
        sync=True,
    )
    assert (blessed.version_id, sorted(blessed.version_aliases)) == ("1", ["blessed", "default"])
    challenger = aiplatform.Model.upload(
        display_name=f"churn-{transport}",
        artifact_uri="gs://bkt/v2",
        serving_container_image_uri=IMAGE,
        parent_model=blessed.resource_name,
        is_default_version=False,
        version_aliases=["challenger"],
        sync=True,
    )
    assert challenger.resource_name == blessed.resource_name
    assert (challenger.version_id, list(challenger.version_aliases)) == ("2", ["challenger"])
    assert challenger.versioned_resource_name == f"{blessed.resource_name}@2"

    registry = ModelRegistry(blessed)
    infos = registry.list_versions()
    assert [(i.version_id, sorted(i.version_aliases)) for i in infos] == [
        ("1", ["blessed", "default"]),
        ("2", ["challenger"]),
    ]
    assert infos[0].version_description == "first night"
    assert infos[1].version_create_time >= infos[0].version_create_time
    assert registry.get_model(version="challenger").version_id == "2"
    assert aiplatform.Model(blessed.resource_name).version_id == "1"  # the default version
    assert aiplatform.Model(f"{blessed.resource_name}@2").uri == "gs://bkt/v2"
    assert aiplatform.Model(f"{blessed.name}@challenger").version_id == "2"  # an id and alias

    # Promote: the blessed alias and the default move to version 2 in one call each.
    registry.add_version_aliases(["blessed", "default"], version="2")
    assert aliases(blessed.resource_name) == {"1": [], "2": ["blessed", "challenger", "default"]}
    assert aiplatform.Model(blessed.resource_name).version_id == "2"
    registry.remove_version_aliases(["challenger"], version="2")
    assert registry.get_version_info("2").version_aliases == ["blessed", "default"]

    # Roll back is one alias move; the old default version can then go.
    registry.add_version_aliases(["default", "blessed"], version="1")
    registry.delete_version("2")
    assert [i.version_id for i in registry.list_versions()] == ["1"]
    third = aiplatform.Model.upload(
        display_name=f"churn-{transport}",
        artifact_uri="gs://bkt/v3",
        serving_container_image_uri=IMAGE,
        parent_model=blessed.name,  # an id is a parent_model too
        sync=True,
    )
    assert third.version_id == "3"  # never reused
    assert aiplatform.Model(blessed.resource_name).version_id == "3"  # is_default_version
    registry.update_version("3", version_description="third night")
    assert registry.get_version_info("3").version_description == "third night"
    blessed.update(display_name=f"churn-{transport}-renamed")
    assert {i.model_display_name for i in registry.list_versions()} == {
        f"churn-{transport}-renamed"
    }
    blessed.delete()
    with pytest.raises(exceptions.NotFound):
        aiplatform.Model(f"{blessed.resource_name}@1")


def test_a_new_model_always_gets_the_default_alias_on_version_1(emu: emulator.Emulator) -> None:
    name, version = upload(version_aliases=["nightly"])
    assert version == "1"
    assert aliases(name) == {"1": ["default", "nightly"]}
    got = client().get_model(name=f"{name}@default")
    assert (got.name, got.version_id) == (name, "1")
    assert got.version_create_time == got.create_time
    assert got.version_update_time


def test_an_alias_names_one_version_and_moves_when_given_to_another(
    emu: emulator.Emulator,
) -> None:
    name, _ = upload(version_aliases=["blessed"])
    upload(parent_model=name, version_aliases=["blessed"])  # moves from 1 to 2
    assert aliases(name) == {"1": ["default"], "2": ["blessed"]}
    moved = client().merge_version_aliases(name=f"{name}@1", version_aliases=["blessed", "x1"])
    assert (moved.name, sorted(moved.version_aliases)) == (name, ["blessed", "default", "x1"])
    assert aliases(name) == {"1": ["blessed", "default", "x1"], "2": []}
    # Added and removed in one request: "the 2 operations will be cancelled out".
    client().merge_version_aliases(name=f"{name}@2", version_aliases=["x1", "-x1"])
    assert aliases(name)["1"] == ["blessed", "default", "x1"]
    # The version an alias names can be the version named.
    client().merge_version_aliases(name=f"{name}@blessed", version_aliases=["-x1"])
    assert aliases(name)["1"] == ["blessed", "default"]


def test_default_cannot_be_removed_and_its_version_or_the_only_one_not_deleted(
    emu: emulator.Emulator,
) -> None:
    name, _ = upload()
    with pytest.raises(exceptions.FailedPrecondition, match="only version"):
        client().delete_model_version(name=f"{name}@1").result(timeout=30)
    upload(parent_model=name)
    with pytest.raises(exceptions.FailedPrecondition, match="exactly one default"):
        client().merge_version_aliases(name=f"{name}@1", version_aliases=["-default"])
    with pytest.raises(exceptions.FailedPrecondition, match="default alias"):
        client().delete_model_version(name=f"{name}@1").result(timeout=30)
    client().delete_model_version(name=f"{name}@2").result(timeout=30)
    with pytest.raises(exceptions.NotFound):
        client().get_model(name=f"{name}@2")
    with pytest.raises(exceptions.NotFound):
        client().list_model_versions(name=f"{PARENT}/models/no-such-model")
    with pytest.raises(exceptions.NotFound):
        upload(parent_model=f"{PARENT}/models/no-such-model")


def test_update_model_changes_the_fields_its_mask_names_at_the_level_its_name_says(
    emu: emulator.Emulator,
) -> None:
    name, _ = upload("before")
    upload("before", parent_model=name)
    mask = field_mask_pb2.FieldMask

    def update(model: dict[str, Any], *paths: str) -> Any:
        return client().update_model(model=model, update_mask=mask(paths=list(paths)))

    got = update({"name": name, "display_name": "after", "description": "d"}, "display_name")
    assert (got.display_name, got.description) == ("after", "")
    assert {v.display_name for v in client().list_model_versions(name=name)} == {"after"}
    got = update({"name": f"{name}@2", "version_description": "v2"}, "version_description")
    assert (got.version_id, got.version_description) == ("2", "v2")
    got = update({"name": f"{name}@2", "labels": {"night": "2"}}, "labels")
    assert dict(got.labels) == {"night": "2"}
    assert [dict(v.labels) for v in client().list_model_versions(name=name)] == [{}, {"night": "2"}]
    listed = client().list_model_versions(request={"name": name, "filter": 'labels.night="2"'})
    assert [v.version_id for v in listed] == ["2"]
    with pytest.raises(exceptions.FailedPrecondition, match="mismatch"):
        update({"name": f"{name}@2", "display_name": "x"}, "display_name")
    with pytest.raises(exceptions.InvalidArgument, match="both the model and the version"):
        update({"name": f"{name}@2", "display_name": "x"}, "display_name", "version_description")
    with pytest.raises(exceptions.InvalidArgument, match="artifact_uri"):
        update({"name": name, "artifact_uri": "gs://b/x"}, "artifact_uri")


def test_list_model_versions_pages_and_orders(emu: emulator.Emulator) -> None:
    name, _ = upload()
    for _ in range(4):
        upload(parent_model=name)
    first = client().list_model_versions(request={"name": name, "page_size": 2})
    assert [v.version_id for v in first.models] == ["1", "2"] and first.next_page_token
    assert [v.version_id for v in first] == ["1", "2", "3", "4", "5"]
    newest = client().list_model_versions(
        request={"name": name, "order_by": "create_time desc", "page_size": 2}
    )
    assert [v.version_id for v in newest] == ["5", "4", "3", "2", "1"]
    assert [m.version_id for m in client().list_models(parent=PARENT) if m.name == name] == ["1"]


HOSTILE_ALIASES = [
    ("7", "version id"),
    ("42x", "lowercase letter"),
    ("Blessed", "lowercase letter"),
    ("a", "2 to 128"),
    ("blessed-", "ending in"),
    ("bl_essed", "letters, digits and '-'"),
    ("b" * 129, "2 to 128"),
    ("blé", "letters"),
    ("bad alias", "letters"),
    ("", "alias"),
    ("--x", "alias"),
]


@pytest.mark.parametrize(
    ("alias", "why"), HOSTILE_ALIASES, ids=[a[:12] or "empty" for a, _ in HOSTILE_ALIASES]
)
def test_hostile_aliases_are_refused_naming_the_rule(
    emu: emulator.Emulator, alias: str, why: str
) -> None:
    name, _ = upload()
    with pytest.raises(exceptions.InvalidArgument) as upload_refusal:
        upload(parent_model=name, version_aliases=[alias])
    with pytest.raises(exceptions.InvalidArgument) as merge_refusal:
        client().merge_version_aliases(name=f"{name}@1", version_aliases=[alias])
    for refusal in (upload_refusal, merge_refusal):
        text = str(refusal.value.message)
        assert "[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]" in text and "version_aliases[0]" in text
    assert aliases(name) == {"1": ["default"]}  # nothing made, nothing moved


HOSTILE_REFERENCES = ["0", "01", "-1", "1.0", "", "@1", "v 1", "🙂", "9" * 40]


@pytest.mark.parametrize("ref", HOSTILE_REFERENCES)
def test_hostile_version_names_are_refused_naming_what_is_accepted(
    emu: emulator.Emulator, ref: str
) -> None:
    name, _ = upload()
    for call in (
        lambda: client().get_model(name=f"{name}@{ref}"),
        lambda: client().merge_version_aliases(name=f"{name}@{ref}", version_aliases=["x1"]),
        lambda: client().delete_model_version(name=f"{name}@{ref}"),
    ):
        with pytest.raises(exceptions.InvalidArgument, match="models/ID@VERSION"):
            call()
    with pytest.raises(exceptions.InvalidArgument, match="parent_model"):
        upload(parent_model=f"{name}@{ref}")
    with pytest.raises(exceptions.InvalidArgument, match="names no version"):
        client().merge_version_aliases(name=name, version_aliases=["x1"])
    with pytest.raises(exceptions.InvalidArgument, match="model_id"):
        upload(parent_model=name, model_id="other")


def test_two_clients_moving_one_alias_at_once_leave_it_on_one_version(
    emu: emulator.Emulator,
) -> None:
    name, _ = upload(version_aliases=["blessed"])
    for _ in range(3):
        upload(parent_model=name)
    start = threading.Barrier(12)
    errors: list[BaseException] = []
    made: list[str] = []

    def promote_by_upload() -> None:
        try:
            start.wait()
            made.append(upload(parent_model=name, version_aliases=["blessed", "default"])[1])
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    def promote_by_merge(version: str) -> None:
        try:
            start.wait()
            client().merge_version_aliases(
                name=f"{name}@{version}", version_aliases=["blessed", "default"]
            )
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=promote_by_upload) for _ in range(6)]
    threads += [threading.Thread(target=promote_by_merge, args=(str(1 + i % 4),)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    held = aliases(name)
    assert sorted(made, key=int) == [str(v) for v in range(5, 11)]  # every upload is kept
    assert sorted(held, key=int) == [str(v) for v in range(1, 11)]
    holders = [v for v, a in held.items() if "blessed" in a]
    assert len(holders) == 1 and "default" in held[holders[0]]
    assert sum("default" in a for a in held.values()) == 1
    assert client().get_model(name=name).version_id == holders[0]


def rest(emu: emulator.Emulator, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{emu.rest_address}/{HOST}{path}",
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
    )
    request.add_header("Content-Type", "application/json")
    token = (emu.root / "storage.token").read_text().strip()
    request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_versions_over_the_rest_door_v1_and_v1beta1(emu: emulator.Emulator, version: str) -> None:
    name, _ = upload()
    status, op = rest(
        emu,
        "POST",
        f"/{version}/{PARENT}/models:upload",
        {
            "parentModel": name,
            "model": {"displayName": "m", "versionAliases": ["candidate"]},
        },
    )
    assert status == 200 and op["done"] and op["response"]["modelVersionId"] == "2", op
    status, listed = rest(emu, "GET", f"/{version}/{name}:listVersions")
    assert [(m["versionId"], m.get("versionAliases")) for m in listed["models"]] == [
        ("1", ["default"]),
        ("2", ["candidate"]),
    ]
    status, merged = rest(
        emu,
        "POST",
        f"/{version}/{name}@2:mergeVersionAliases",
        {"versionAliases": ["default", "-candidate"]},
    )
    assert status == 200 and merged["versionAliases"] == ["default"], merged
    status, got = rest(emu, "GET", f"/{version}/{name}@default")
    assert (status, got["versionId"], got["name"]) == (200, "2", name)
    status, refused = rest(
        emu, "POST", f"/{version}/{name}@2:mergeVersionAliases", {"versionAliases": ["Bad"]}
    )
    assert status == 400 and "version_aliases[0]" in refused["error"]["message"]
    status, op = rest(emu, "DELETE", f"/{version}/{name}@1:deleteVersion")
    assert status == 200 and op["done"], op
    status, listed = rest(emu, "GET", f"/{version}/{name}:listVersions")
    assert [m["versionId"] for m in listed["models"]] == ["2"]


def test_v1beta1_over_grpc(emu: emulator.Emulator) -> None:
    beta = aiplatform_v1beta1.ModelServiceClient(
        transport=aiplatform_v1beta1.services.model_service.transports.ModelServiceGrpcTransport(
            channel=grpc.insecure_channel(emu.address)
        )
    )
    first = beta.upload_model(
        parent=PARENT, model={"display_name": "beta", "version_aliases": ["blessed"]}
    ).result(timeout=30)
    second = beta.upload_model(
        request={"parent": PARENT, "parent_model": first.model, "model": {"display_name": "beta"}}
    ).result(timeout=30)
    assert second.model_version_id == "2"
    beta.merge_version_aliases(name=f"{first.model}@2", version_aliases=["blessed"])
    assert beta.get_model(name=f"{first.model}@blessed").version_id == "2"
    assert [v.version_id for v in beta.list_model_versions(name=first.model)] == ["1", "2"]


def test_an_older_stores_model_reads_as_version_1(tmp_path: Path) -> None:
    """A Model stored before versions (one row, no version rows) is version 1 of itself."""
    from google.cloud.aiplatform_v1.types import model as model_types

    from trainpool.emulator.model_registry import models
    from trainpool.emulator.records.database import Database
    from trainpool.emulator.records.kinds import MODELS
    from trainpool.emulator.records.resources import Records

    records = Records(Database(tmp_path / "db.sqlite"))
    old = model_types.Model(
        name=f"{PARENT}/models/old", display_name="old", version_id="1", version_aliases=["default"]
    )
    records.insert(MODELS, PARENT, old)
    assert [v.version_id for v in models.versions(records, old.name) or []] == ["1"]
    added = models.register(
        records.db, records, PARENT, model_types.Model(display_name="old"), "", old.name
    )
    assert added.version_id == "2"
    found, _ = models.page(records, old.name, filter="", page_size=0, page_token="", order_by="")
    assert [(v.version_id, list(v.version_aliases)) for v in found] == [
        ("1", ["default"]),
        ("2", []),
    ]
