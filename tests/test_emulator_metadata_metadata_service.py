"""Vertex AI Experiments and ML Metadata with the official SDK, unchanged, over gRPC and REST.

What is asserted is what Vertex answers, as the SDK's own system tests against Vertex assert
it (googleapis/python-aiplatform ``tests/system/aiplatform/test_experiments.py`` at v1.165.1,
commit 3219d51921dbc9b65734a793dbab9619d0a7547d): ``get_experiment_df`` has one row per run
with ``param.*``, ``metric.*``, ``time_series_metric.*`` (the last value), ``state``,
``run_type``; ``log_time_series_metrics`` without a step numbers steps from 1;
``get_classification_metrics`` gives back what was logged; a list filter
``display_name = NAME`` (unquoted) finds the one experiment. And the API's own rules
(``types/metadata_service.py``): ids of 4-128 ``[a-z0-9-]``, ALREADY_EXISTS for a taken
id, no cycles among contexts, and an update with a stale ``etag`` ABORTED, as Vertex
answered in googleapis/python-aiplatform#1674.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions
from google.cloud import aiplatform
from google.cloud.aiplatform_v1.services.metadata_service import MetadataServiceClient
from google.cloud.aiplatform_v1.types import context as context_types

from trainpool.testing import emulated_vertex

pytestmark = pytest.mark.timeout(120)
PROJECT = "demo"
LOCATION = "us-central1"
STORE = f"projects/{PROJECT}/locations/{LOCATION}/metadataStores/default"
PARAMS = [{"lr": 0.1, "opt": "sgd"}, {"lr": 0.01, "opt": "adam"}, {"lr": 0.001, "opt": "sgd"}]
METRICS = [
    {"accuracy": 0.8, "loss": 0.4},
    {"accuracy": 0.9, "loss": 0.3},
    {"accuracy": 0.7, "loss": 0.5},
]


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with emulated_vertex(tmp_path_factory.mktemp("metadata") / "root", PROJECT) as running:
        yield running


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_an_experiment_of_three_runs_reads_back_as_vertex_answers(emu: Any, transport: str) -> None:
    name = f"exp-three-{transport}"
    aiplatform.init(project=PROJECT, location=LOCATION, experiment=name, api_transport=transport)
    for index in range(3):
        with aiplatform.start_run(f"run-{index}") as run:
            aiplatform.log_params(PARAMS[index])
            aiplatform.log_metrics(METRICS[index])
            for value in range(5):
                aiplatform.log_time_series_metrics({"curve": float(value * (index + 1))})
            assert run.state == aiplatform.gapic.Execution.State.RUNNING
    aiplatform.start_run("run-0", resume=True)
    classification = dict(
        display_name="confusion",
        labels=["cat", "dog"],
        matrix=[[9, 1], [1, 9]],
        fpr=[0.1, 0.5, 0.9],
        tpr=[0.1, 0.7, 0.9],
        threshold=[0.9, 0.5, 0.1],
    )
    aiplatform.log_classification_metrics(**classification)
    aiplatform.end_run()

    df = aiplatform.get_experiment_df()
    rows = sorted(df.to_dict("records"), key=lambda row: row["run_name"])
    assert rows == [
        {
            "experiment_name": name,
            "run_name": f"run-{index}",
            "run_type": "system.ExperimentRun",
            "state": "COMPLETE",
            **{f"param.{k}": v for k, v in PARAMS[index].items()},
            **{f"metric.{k}": v for k, v in METRICS[index].items()},
            "time_series_metric.curve": 4.0 * (index + 1),
        }
        for index in range(3)
    ]
    run = aiplatform.ExperimentRun("run-1", experiment=name)
    assert run.get_metrics() == METRICS[1]
    assert run.get_params() == PARAMS[1]
    assert run.get_time_series_data_frame()[["curve", "step"]].to_dict("list") == {
        "curve": [0.0, 2.0, 4.0, 6.0, 8.0],
        "step": [1, 2, 3, 4, 5],
    }
    logged = aiplatform.ExperimentRun("run-0", experiment=name).get_classification_metrics()
    assert len(logged) == 1 and logged[0].pop("id")
    assert logged[0] == classification
    found = aiplatform.Experiment.list(filter=f"display_name = {name}")
    assert [e.name for e in found] == [name]
    assert aiplatform.Experiment.list(filter="display_name = not-an-experiment") == []


def test_metadata_rules_ids_cycles_and_etags(emu: Any) -> None:
    aiplatform.init(project=PROJECT, location=LOCATION, api_transport="grpc")
    client = MetadataServiceClient()
    try:  # the store Experiments make; a store must exist before anything goes in it
        client.create_metadata_store(
            parent=f"projects/{PROJECT}/locations/{LOCATION}", metadata_store_id="default"
        ).result()
    except exceptions.AlreadyExists:
        pass
    with pytest.raises(exceptions.InvalidArgument) as err:
        client.create_context(parent=STORE, context=context_types.Context(), context_id="ab")
    assert "context_id: 'ab'; accepted: 4-128 characters" in err.value.message
    parent = client.create_context(
        parent=STORE,
        context_id="ctx-parent",
        context=context_types.Context(schema_title="system.Experiment"),
    )
    child = client.create_context(
        parent=STORE,
        context_id="ctx-child",
        context=context_types.Context(schema_title="system.ExperimentRun"),
    )
    with pytest.raises(exceptions.AlreadyExists):
        client.create_context(parent=STORE, context_id="ctx-child", context=context_types.Context())
    client.add_context_children(context=parent.name, child_contexts=[child.name])
    assert list(client.get_context(name=child.name).parent_contexts) == [parent.name]
    with pytest.raises(exceptions.InvalidArgument) as err:
        client.add_context_children(context=child.name, child_contexts=[parent.name])
    assert "cycle" in err.value.message
    listed = client.list_contexts(
        request={"parent": STORE, "filter": f'parent_contexts:"{parent.name}"'}
    )
    assert [c.name for c in listed] == [child.name]
    stale = client.get_context(name=child.name)
    fresh = client.get_context(name=child.name)
    fresh.display_name = "first"
    client.update_context(context=fresh)
    stale.display_name = "second"
    with pytest.raises(exceptions.Aborted) as err:
        client.update_context(context=stale)
    assert "does not match server `etag`" in err.value.message
    assert client.get_context(name=child.name).display_name == "first"
    with pytest.raises(exceptions.InvalidArgument) as err:
        list(client.list_contexts(request={"parent": STORE, "filter": 'display_nam = "x"'}))
    assert "display_nam" in err.value.message and "accepted:" in err.value.message


@pytest.mark.parametrize(
    ("resource_id", "accepted"),
    [
        ("abcd", True),
        ("0000", True),
        ("run-1", True),
        ("a" * 128, True),
        ("abc", False),  # "Must be 4-128 characters in length"
        ("a" * 129, False),
        ("Run-1", False),  # "Valid characters are /[a-z][0-9]-/"
        ("run_1", False),
        ("run.1", False),
    ],
)
@pytest.mark.parametrize("kind", ["context", "artifact", "execution"])
def test_a_metadata_id_follows_the_protos_rule(
    emu: Any, kind: str, resource_id: str, accepted: bool
) -> None:
    """``context_id``, ``artifact_id``, ``execution_id`` (metadata_service.proto): "Must be
    4-128 characters in length. Valid characters are /[a-z][0-9]-/"; experiments and their
    runs are contexts, so their ids follow it too."""
    client = MetadataServiceClient()
    try:
        client.create_metadata_store(
            parent=f"projects/{PROJECT}/locations/{LOCATION}", metadata_store_id="default"
        ).result()
    except exceptions.AlreadyExists:
        pass
    create = getattr(client, f"create_{kind}")
    request = {"parent": STORE, f"{kind}_id": resource_id, kind: {}}
    if accepted:
        made = create(request=request)
        assert made.name == f"{STORE}/{kind}s/{resource_id}"
    else:
        with pytest.raises(exceptions.InvalidArgument) as err:
            create(request=request)
        assert err.value.message.startswith(f"{kind}_id: '{resource_id[:20]}")
        assert "accepted: 4-128 characters of lowercase letters, digits and '-'" in (
            err.value.message
        )


def test_list_metadata_stores_lists_the_store_experiments_use(emu: Any) -> None:
    """ListMetadataStores (its request has no filter) answers the stores, as Vertex does."""
    aiplatform.init(project=PROJECT, location=LOCATION, api_transport="grpc")
    client = MetadataServiceClient()
    parent = f"projects/{PROJECT}/locations/{LOCATION}"
    try:
        client.create_metadata_store(parent=parent, metadata_store_id="default").result()
    except exceptions.AlreadyExists:
        pass
    assert STORE in [store.name for store in client.list_metadata_stores(parent=parent)]
