"""A user-chosen model id follows Vertex's rule (``UploadModelRequest.model_id``,
model_service.proto: "This value may be up to 63 characters, and valid characters are
`[a-z0-9_-]`. The first character cannot be a number or hyphen."), checked by
``model_registry/models.py`` for UploadModel and for a TrainingPipeline's ``model_id`` alike; the
SDK's ``aiplatform.Model.upload(model_id=...)`` over gRPC and REST."""

from __future__ import annotations

import re
import string
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions
from google.cloud import aiplatform, storage
from hypothesis import given
from hypothesis import strategies as st

from trainpool.emulator.model_registry import models
from trainpool.errors import InputError
from trainpool.testing import emulated_vertex

pytestmark = pytest.mark.timeout(120)
WHERE = {"project": "demo", "location": "us-central1"}
VERTEX_RULE = re.compile(r"[a-z_][a-z0-9_-]{0,62}")  # the proto comment, written as a regex


@pytest.mark.parametrize(
    ("model_id", "accepted"),
    [
        ("my_model_id_123", True),  # the id Google's own SDK tests upload
        ("_private", True),
        ("m", True),
        ("m" * 63, True),
        ("model-1", True),
        ("1model", False),  # "The first character cannot be a number or hyphen"
        ("-model", False),
        ("m" * 64, False),  # "up to 63 characters"
        ("Model", False),
        ("my.model", False),
        ("a/b", False),
    ],
)
def test_the_model_id_rule(model_id: str, accepted: bool) -> None:
    if accepted:
        models.check_id(model_id)
    else:
        with pytest.raises(InputError) as err:
            models.check_id(model_id)
        assert str(err.value).startswith(f"model_id: {model_id[:20]!r}"[:-1])
        assert "accepted: up to 63 lowercase letters, digits, '_' and '-'" in str(err.value)


@given(st.text(alphabet=string.ascii_letters + string.digits + "_-./", max_size=70))
def test_the_rule_is_the_proto_comments(model_id: str) -> None:
    try:
        models.check_id(model_id)
        refused = False
    except InputError:
        refused = True
    assert refused == (bool(model_id) and not VERTEX_RULE.fullmatch(model_id))


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with emulated_vertex(tmp_path_factory.mktemp("models") / "root", "demo") as running:
        storage.Client().create_bucket("models-bucket")
        yield running


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_the_sdk_uploads_a_model_with_an_underscored_id(emu: Any, transport: str) -> None:
    aiplatform.init(api_transport=transport, **WHERE)
    model_id = f"my_model_id_{transport}"
    model = aiplatform.Model.upload(
        display_name="underscored",
        artifact_uri="gs://models-bucket/model",
        serving_container_image_uri="us-docker.pkg.dev/vertex-ai/prediction/sklearn-cpu.1-0:latest",
        model_id=model_id,
    )
    assert model.resource_name.endswith(f"/models/{model_id}")
    assert aiplatform.Model(model_id).display_name == "underscored"
    with pytest.raises(exceptions.BadRequest) as err:
        aiplatform.Model.upload(
            display_name="digit",
            artifact_uri="gs://models-bucket/model",
            serving_container_image_uri="us-docker.pkg.dev/vertex-ai/prediction/sklearn-cpu.1-0:latest",
            model_id=f"1{transport}",
        )
    assert f"model_id: '1{transport}'; accepted: up to 63 lowercase letters" in str(err.value)


@pytest.mark.parametrize(
    ("alias", "accepted"),
    [
        ("champion", True),
        ("v2-candidate", True),
        ("aB-9", True),
        ("a" * 128, True),
        ("a" * 129, False),  # [a-z][a-zA-Z0-9-]{0,126}[a-z0-9]
        ("Champion", False),
        ("2nd", False),
        ("ends-", False),
        ("endsUpper", True),
        ("endS", False),
        ("x", False),
    ],
)
def test_the_version_alias_rule(alias: str, accepted: bool) -> None:
    if accepted:
        models.check_aliases([alias])
    else:
        with pytest.raises(InputError) as err:
            models.check_aliases([alias])
        assert str(err.value).startswith("model.version_aliases[0]: ")
        assert "[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]" in str(err.value)


def test_the_sdk_names_a_version_by_its_alias(emu: Any) -> None:
    aiplatform.init(api_transport="grpc", **WHERE)
    model = aiplatform.Model.upload(
        display_name="aliased",
        artifact_uri="gs://models-bucket/model",
        serving_container_image_uri="us-docker.pkg.dev/vertex-ai/prediction/sklearn-cpu.1-0:latest",
        model_id="aliased_model",
        version_aliases=["champion"],
    )
    assert sorted(model.version_aliases) == ["champion", "default"]
    assert aiplatform.Model("aliased_model", version="champion").version_id == "1"
    with pytest.raises(exceptions.NotFound):
        aiplatform.Model("aliased_model", version="challenger")
    with pytest.raises(exceptions.BadRequest) as err:
        aiplatform.Model.upload(
            display_name="bad-alias",
            artifact_uri="gs://models-bucket/model",
            serving_container_image_uri="us-docker.pkg.dev/vertex-ai/prediction/sklearn-cpu.1-0:latest",
            version_aliases=["Champion"],
        )
    assert "model.version_aliases[0]: 'Champion'" in str(err.value)
    assert "accepted:" in str(err.value)
