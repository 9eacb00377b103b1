"""The execution cache key (trainpool.kfp_local.cache) is the step's interface as Vertex
documents it
(https://cloud.google.com/vertex-ai/docs/pipelines/configure-caching): its inputs (parameter
values, input artifacts' IDs), its output definition (names), the component's image,
commands, arguments and environment variables in their order; and only pipelines of the same
name share the cache. Two runs end to end: tests/test_emulator_pipeline_jobs_runs.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kfp import dsl

from trainpool.kfp_local.cache import TaskCache, key

SCOPE = ("demo", "us-central1", "training")
COMPONENT: dict[str, Any] = {
    "outputDefinitions": {
        "parameters": {"Output": {"parameterType": "STRING"}},
        "artifacts": {"model": {"artifactType": {"schemaTitle": "system.Model"}}},
    }
}
CONTAINER: dict[str, Any] = {
    "image": "python:3.11",
    "command": ["sh", "-c", "run"],
    "args": ["--executor_input", "{{$}}"],
    "env": [{"name": "A", "value": "1"}],
}
DATA = dsl.Dataset(name="data", uri="gs://b/runs/0/job/prep_2/data", metadata={})
ARGUMENTS = {"lr": 0.1, "data": DATA}


def base(**change: Any) -> str:
    values: dict[str, Any] = {
        "scope": SCOPE,
        "component_name": "comp-train",
        "component": COMPONENT,
        "container": CONTAINER,
        "arguments": ARGUMENTS,
    }
    values.update(change)
    return key(**values)


def test_the_same_interface_is_the_same_key() -> None:
    again = dsl.Dataset(name="data", uri=DATA.uri, metadata={"rows": 3})
    assert base() == base(arguments={"data": again, "lr": 0.1})  # an artifact is its ID


@pytest.mark.parametrize(
    "change",
    [
        {"scope": ("demo", "us-central1", "another-pipeline")},
        {"scope": ("other", "us-central1", "training")},
        {"arguments": {"lr": 0.2, "data": DATA}},
        {"arguments": {"lr": 0.1, "data": dsl.Dataset(name="data", uri="gs://b/other")}},
        {"component": {"outputDefinitions": {"parameters": {"Other": {}}}}},
        {"container": {**CONTAINER, "image": "python:3.12"}},
        {"container": {**CONTAINER, "command": ["sh", "-c", "other"]}},
        {"container": {**CONTAINER, "args": ["{{$}}", "--executor_input"]}},
        {"container": {**CONTAINER, "env": [{"name": "A", "value": "2"}]}},
    ],
    ids=[
        "pipeline-name",
        "project",
        "parameter",
        "artifact",
        "outputs",
        "image",
        "command",
        "argument-order",
        "env",
    ],
)
def test_any_part_of_the_interface_changes_the_key(change: dict[str, Any]) -> None:
    assert base(**change) != base()


def test_a_custom_cache_key_stands_for_the_interface_within_its_component() -> None:
    assert base(custom="v1") == base(custom="v1", arguments={"lr": 9})
    assert base(custom="v1") != base(custom="v2")
    assert base(custom="v1") != base(custom="v1", component_name="comp-other")


def test_outputs_come_back_as_they_were_kept(tmp_path: Path) -> None:
    cache = TaskCache(tmp_path / "pipeline-cache")
    model = dsl.Model(name="model", uri="gs://b/runs/0/job/train_3/model", metadata={"acc": 0.9})
    cache.put("k", {"Output": "done", "model": model, "many": [DATA]}, {"job": "j", "task": "t"})
    found = cache.get("k")
    assert found is not None
    outputs, source = found
    assert source == {"job": "j", "task": "t"}
    assert outputs["Output"] == "done"
    assert isinstance(outputs["model"], dsl.Model)
    assert (outputs["model"].uri, outputs["model"].metadata) == (model.uri, {"acc": 0.9})
    assert [a.uri for a in outputs["many"]] == [DATA.uri]
    assert cache.get("missing") is None
