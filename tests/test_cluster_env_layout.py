"""Pool roles: which replicas exist, which pool is a Reduction Server, node ranks."""

from __future__ import annotations

import pytest

from trainpool.cluster_env.layout import is_reduction_server, node_ranks, pool_role, replicas

RS = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"


@pytest.mark.parametrize(
    "uri",
    [
        RS,
        "europe-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest",
        "asia-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:v2",
        "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver",
        "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver@sha256:0123abcd",
    ],
)
def test_reducer_image_on_any_host_and_tag(uri: str) -> None:
    assert is_reduction_server({"containerSpec": {"imageUri": uri}})
    assert is_reduction_server({"container_spec": {"image_uri": uri}})


@pytest.mark.parametrize(
    "pool",
    [
        {},
        {"containerSpec": {"imageUri": "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4"}},
        {"containerSpec": {"imageUri": RS.replace("reductionserver", "reductionserver-x")}},
        {"containerSpec": {"imageUri": "us-docker.pkg.dev/me/training/reductionserver:1"}},
        {"pythonPackageSpec": {"executorImageUri": RS}},
    ],
)
def test_other_images_are_not_reducers(pool: dict) -> None:
    assert not is_reduction_server(pool)


def test_replicas_of_every_non_empty_pool_in_any_count_form() -> None:
    spec = {
        "workerPoolSpecs": [{"replicaCount": 1}, {}, {"replicaCount": "2"}, {"replicaCount": 2.0}]
    }
    assert replicas(spec) == [(0, 0), (2, 0), (2, 1), (3, 0), (3, 1)]
    snake = {"worker_pool_specs": [{"replica_count": "1"}, {"replica_count": 3}]}
    assert replicas(snake) == [(0, 0), (1, 0), (1, 1), (1, 2)]
    assert replicas({}) == []


@pytest.mark.parametrize("count", [1.5, "two", -1, True, [1], "inf", float("inf"), 1e400])
def test_bad_replica_count_names_the_field(count: object) -> None:
    with pytest.raises(ValueError) as err:
        replicas({"workerPoolSpecs": [{"replicaCount": 1}, {"replicaCount": count}]})
    assert f"workerPoolSpecs[1].replicaCount: {count!r}" in str(err.value)
    assert "accepted" in str(err.value)


def test_roles_and_node_ranks_exclude_reducers_by_default() -> None:
    spec = {
        "workerPoolSpecs": [
            {"replicaCount": 1},
            {"replicaCount": 2},
            {"replicaCount": 2, "containerSpec": {"imageUri": RS}},
            {"replicaCount": 1},
        ]
    }
    roles = [pool_role(spec, p) for p in range(4)]
    assert roles == ["primary", "worker", "reduction_server", "evaluator"]
    assert node_ranks(spec) == {(0, 0): 0, (1, 0): 1, (1, 1): 2, (3, 0): 3}
    assert node_ranks(spec, reducers_in_world=True) == {
        (0, 0): 0,
        (1, 0): 1,
        (1, 1): 2,
        (2, 0): 3,
        (2, 1): 4,
        (3, 0): 5,
    }
    spec["workerPoolSpecs"][2] = {"replicaCount": 1}
    assert pool_role(spec, 2) == "parameter_server"
    assert node_ranks(spec)[(2, 0)] == 3
