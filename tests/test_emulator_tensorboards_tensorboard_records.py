"""User-chosen TensorBoard ids follow the protos' rules (``tensorboards/tensorboard_records.py``):
``tensorboard_experiment_id`` and ``tensorboard_run_id``: "This value should be 1-128
characters, and valid characters are /[a-z][0-9]-/"; ``tensorboard_time_series_id``: "This
value should match "[a-z0-9][a-z0-9-]{0, 127}"" (tensorboard_service.proto). A refused id is
INVALID_ARGUMENT naming the field, the id and what is accepted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions
from google.cloud.aiplatform_v1.services.tensorboard_service import TensorboardServiceClient
from google.cloud.aiplatform_v1.types import tensorboard_time_series as tts

from trainpool.testing import emulated_vertex

pytestmark = pytest.mark.timeout(120)
PARENT = "projects/demo/locations/us-central1"


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str, str]]:
    with emulated_vertex(tmp_path_factory.mktemp("tb") / "root", "demo"):
        client = TensorboardServiceClient()
        made = client.create_tensorboard(
            parent=PARENT, tensorboard={"display_name": "ids"}
        ).result()
        experiment = client.create_tensorboard_experiment(
            parent=made.name, tensorboard_experiment={}, tensorboard_experiment_id="exp"
        )
        run = client.create_tensorboard_run(
            parent=experiment.name, tensorboard_run={"display_name": "r"}, tensorboard_run_id="run"
        )
        yield client, made.name, run.name


RUN_IDS = [
    ("a", True),
    ("0", True),
    ("-lead", True),  # /[a-z][0-9]-/ says nothing of the first character
    ("r" * 128, True),
    ("", False),  # "1-128 characters"
    ("r" * 129, False),
    ("Run", False),
    ("run_1", False),
]


@pytest.mark.parametrize(("resource_id", "accepted"), RUN_IDS)
@pytest.mark.parametrize("kind", ["tensorboard_experiment", "tensorboard_run"])
def test_experiment_and_run_ids(
    board: tuple[Any, str, str], kind: str, resource_id: str, accepted: bool
) -> None:
    client, name, run = board
    parent = name if kind == "tensorboard_experiment" else run.rsplit("/runs/", 1)[0]
    create = getattr(client, f"create_{kind}")
    request = {"parent": parent, kind: {"display_name": "x"}, f"{kind}_id": resource_id}
    if accepted:
        assert create(request=request).name.endswith(f"/{resource_id}")
    else:
        with pytest.raises(exceptions.InvalidArgument) as err:
            create(request=request)
        assert f"{kind}_id: '{resource_id[:20]}" in err.value.message
        assert "accepted: 1-128 lowercase letters, digits and '-'" in err.value.message


@pytest.mark.parametrize(
    ("resource_id", "accepted"),
    [
        ("loss", True),
        ("0-loss", True),
        ("s" * 128, True),
        ("-loss", False),  # "[a-z0-9][a-z0-9-]{0, 127}": a letter or digit first
        ("s" * 129, False),
        ("Loss", False),
        ("loss_1", False),
    ],
)
def test_time_series_ids(board: tuple[Any, str, str], resource_id: str, accepted: bool) -> None:
    client, _, run = board
    series = {
        "display_name": f"tag-{resource_id}"[:100],
        "value_type": tts.TensorboardTimeSeries.ValueType.SCALAR,
    }
    request = {
        "parent": run,
        "tensorboard_time_series": series,
        "tensorboard_time_series_id": resource_id,
    }
    if accepted:
        made = client.create_tensorboard_time_series(request=request)
        assert made.name.endswith(f"/timeSeries/{resource_id}")
    else:
        with pytest.raises(exceptions.InvalidArgument) as err:
            client.create_tensorboard_time_series(request=request)
        assert f"tensorboard_time_series_id: '{resource_id[:20]}" in err.value.message
        assert "accepted: [a-z0-9][a-z0-9-]{0,127}" in err.value.message
