"""parse_env: round trips over every pool layout, and every observed variant of the variables."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from trainpool.cluster_env import EnvError, ReplicaContext, build_env, local_hosts, parse_env
from trainpool.cluster_env.layout import replicas

RS = "europe-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
SETTINGS: dict[str, Any] = {"job_id": "7", "project": "42", "region": "europe-west4"}


def layouts() -> list[dict[str, Any]]:
    """Every layout: 0-2 workers, pool 2 absent / 1 parameter server / 2 reducers,
    0-2 evaluators; skipped pools as ``{}``, trailing ones trimmed."""
    found = []
    for workers, third, evaluators in itertools.product((0, 1, 2), ("none", "ps", "rs"), (0, 2)):
        specs: list[dict[str, Any]] = [{"replicaCount": 1}, {}, {}, {}]
        if workers:
            specs[1] = {"replicaCount": workers}
        if third == "ps":
            specs[2] = {"replicaCount": 1}
        if third == "rs":
            specs[2] = {"replicaCount": 2, "containerSpec": {"imageUri": RS}}
        if evaluators:
            specs[3] = {"replicaCount": evaluators}
        while specs[-1] == {}:
            specs.pop()
        found.append({"workerPoolSpecs": specs})
    return found


@pytest.mark.parametrize("spec", layouts(), ids=lambda s: json.dumps(s["workerPoolSpecs"]))
@pytest.mark.parametrize("trial", [None, "4"])
def test_build_then_parse_round_trips(spec: dict[str, Any], trial: str | None) -> None:
    spec = spec | {"baseOutputDirectory": {"outputUriPrefix": "gs://bkt/o"}}
    hosts = local_hosts(spec)
    members = replicas(spec)
    reducers = [(2, i) for i in range(2)] if "containerSpec" in str(spec) else []
    world = [m for m in members if m not in reducers]
    base = f"gs://bkt/o/{trial}/" if trial else "gs://bkt/o/"
    for pool, index in members:
        env = build_env(spec, pool, index, hosts=hosts, trial_id=trial, **SETTINGS)
        ctx = parse_env(env)
        master, port = hosts[0][0].split(":")
        role = ["primary", "worker", "parameter_server", "evaluator"][pool]
        assert ctx == ReplicaContext(
            role="reduction_server" if (pool, index) in reducers else role,
            pool=pool,
            index=index,
            node_rank=world.index((pool, index)) if (pool, index) in world else None,
            world_size=len(world),
            is_chief=pool == 0,
            trial_id=trial,
            master_addr=master,
            master_port=int(port),
            model_dir=base + "model/",
            checkpoint_dir=base + "checkpoints/",
            tensorboard_log_dir=base + "logs/",
            job_id="7",
            project="42",
            region="europe-west4",
            cluster=hosts,
            job=spec,
        )
        assert ctx.replica_name == f"workerpool{pool}-{index}"


def test_snake_case_spec_with_string_counts_round_trips() -> None:
    spec = {"worker_pool_specs": [{"replica_count": "1"}, {"replica_count": 2.0}]}
    hosts = local_hosts(spec)
    ctx = parse_env(build_env(spec, 1, 1, hosts=hosts, job_as_dict=True, **SETTINGS))
    assert (ctx.role, ctx.pool, ctx.index, ctx.node_rank, ctx.world_size) == ("worker", 1, 1, 2, 3)
    assert ctx.job == spec


def test_observed_vertex_value_with_string_job_and_open_ports() -> None:
    hosts = [f"cmle-training-workerpool1-4c1d6d97d0-{i}:2222" for i in range(4)]
    observed = {
        "cluster": {
            "workerpool0": ["cmle-training-workerpool0-4c1d6d97d0-0:2222"],
            "workerpool1": hosts,
        },
        "environment": "cloud",
        "task": {"type": "workerpool1", "index": 3},
        "job": '{"python_module":"","package_uris":[],"job_args":[]}',
        "open_ports": [3333],
    }
    ctx = parse_env({"CLUSTER_SPEC": json.dumps(observed)})
    assert ctx == ReplicaContext(
        role="worker",
        pool=1,
        index=3,
        node_rank=4,
        world_size=5,
        is_chief=False,
        master_addr="cmle-training-workerpool0-4c1d6d97d0-0",
        master_port=2222,
        cluster={0: observed["cluster"]["workerpool0"], 1: hosts},
        job={"python_module": "", "package_uris": [], "job_args": []},
    )


@pytest.mark.parametrize(
    ("task", "trial"), [({}, None), ({"trial": ""}, None), ({"trial": "3"}, "3")]
)
def test_trial_missing_empty_or_set(task: dict[str, str], trial: str | None) -> None:
    spec = {"cluster": {"workerpool0": ["h:1"]}, "task": {"type": "workerpool0", "index": 0} | task}
    assert parse_env({"CLUSTER_SPEC": json.dumps(spec)}).trial_id == trial


@pytest.mark.parametrize("chief", ["chief", "master"])
def test_tf_config_alone_with_chief_or_master(chief: str) -> None:
    config = {
        "cluster": {chief: ["a:1"], "worker": ["b:1", "c:1"], "ps": ["d:1"]},
        "task": {"type": "worker", "index": 1, "trial": "2"},
        "job": {"workerPoolSpecs": [{"replicaCount": 1}, {"replicaCount": 2}, {"replicaCount": 1}]},
    }
    ctx = parse_env({"TF_CONFIG": json.dumps(config)})
    assert (ctx.role, ctx.pool, ctx.index, ctx.node_rank, ctx.world_size) == ("worker", 1, 1, 2, 4)
    assert (ctx.trial_id, ctx.master_addr, ctx.master_port) == ("2", "a", 1)
    assert ctx.cluster == {0: ["a:1"], 1: ["b:1", "c:1"], 2: ["d:1"]}


def test_no_environment_is_a_single_local_process() -> None:
    assert parse_env({}) == ReplicaContext(
        role="primary", pool=0, index=0, node_rank=0, world_size=1, is_chief=True
    )


def test_torch_variables_win_over_the_cluster() -> None:
    spec = {"cluster": {"workerpool0": ["h:1"]}, "task": {"type": "workerpool0", "index": 0}}
    env = {"CLUSTER_SPEC": json.dumps(spec), "RANK": "5", "WORLD_SIZE": "8", "MASTER_ADDR": "m"}
    ctx = parse_env(env | {"MASTER_PORT": "29500"})
    assert (ctx.node_rank, ctx.world_size, ctx.master_addr, ctx.master_port) == (5, 8, "m", 29500)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CLUSTER_SPEC": '{"cluster": '}, "CLUSTER_SPEC is not valid JSON (Expecting value"),
        (
            {"TF_CONFIG": "chief"},
            "TF_CONFIG is not valid JSON (Expecting value at char 0): 'chief'",
        ),
        ({"CLUSTER_SPEC": "[1]"}, "CLUSTER_SPEC is JSON but not an object: '[1]'"),
        ({"CLUSTER_SPEC": '{"task": {"type": "boss"}}'}, "task.type 'boss'; accepted: workerpool0"),
        ({"TF_CONFIG": '{"task": {"type": "w"}}'}, "TF_CONFIG: task.type 'w'; accepted: one of"),
        ({"CLUSTER_SPEC": '{"cluster": {}}'}, "CLUSTER_SPEC: task None has no type"),
        ({"RANK": "zero"}, "RANK: 'zero' is not an integer"),
    ],
)
def test_malformed_values_are_errors_that_quote_the_variable(
    env: dict[str, str], message: str
) -> None:
    with pytest.raises(EnvError) as err:
        parse_env(env)
    assert message in str(err.value)


@pytest.mark.parametrize(("index", "chief"), [(0, True), (1, False)])
def test_tf_config_without_a_chief_makes_worker_0_the_chief(index: int, chief: bool) -> None:
    # The MultiWorkerMirroredStrategy guide: with only worker tasks, worker 0 is the chief.
    config = {"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": index}}
    ctx = parse_env({"TF_CONFIG": json.dumps(config)})
    assert (ctx.role, ctx.pool, ctx.index, ctx.node_rank) == ("worker", 1, index, index)
    assert ctx.is_chief is chief


def test_a_vertex_worker_0_is_not_the_chief() -> None:
    spec = {
        "cluster": {"workerpool0": ["a:1"], "workerpool1": ["b:1"]},
        "task": {"type": "workerpool1", "index": 0},
    }
    assert not parse_env({"CLUSTER_SPEC": json.dumps(spec)}).is_chief


# Samples as Vertex documents or was seen to set them (shared reference: vertex-facts.md A.2,
# A.3; Vertex "Distributed training" page; the SDK's tests/unit/vertexai/test_remote_specs.py).
DOC_CLUSTER = {
    "workerpool0": ["cmle-training-workerpool0-ab-0:2222"],
    "workerpool1": ["cmle-training-workerpool1-ab-0:2222", "cmle-training-workerpool1-ab-1:2222"],
    "workerpool2": ["cmle-training-workerpool2-ab-0:2222", "cmle-training-workerpool2-ab-1:2222"],
    "workerpool3": ["cmle-training-workerpool3-ab-0:2222", "cmle-training-workerpool3-ab-1:2222"],
}
SDK_FIXTURE = (
    '{"cluster":{"workerpool0":["cmle-training-workerpool0-1d969d3ba6-0:2222"],'
    '"workerpool1":["cmle-training-workerpool1-1d969d3ba6-0:2222"]},'
    '"environment":"cloud","task":{"type":"workerpool1","index":0}}'
)
DOC_TF_CONFIG = {
    "cluster": {
        "chief": ["training-workerpool0-[ID]-0:2222"],
        "ps": ["training-workerpool2-[ID]-0:2222"],
        "worker": ["training-workerpool1-[ID]-0:2222"],
    },
    "environment": "cloud",
    "task": {"cloud": "[ID]", "index": 0, "trial": "1", "type": "worker"},
}


@pytest.mark.parametrize(
    ("pool", "index", "expected"),
    [
        (0, 0, ("primary", 0, True)),
        (1, 1, ("worker", 2, False)),
        (2, 0, ("parameter_server", 3, False)),
        (3, 1, ("evaluator", 6, False)),
    ],
)
def test_the_documented_cluster_spec(pool: int, index: int, expected: tuple[Any, ...]) -> None:
    sample = {
        "cluster": DOC_CLUSTER,
        "environment": "cloud",
        "task": {"type": f"workerpool{pool}", "index": index, "trial": "TRIAL_ID"},
        "job": {"workerPoolSpecs": []},
    }
    ctx = parse_env({"CLUSTER_SPEC": json.dumps(sample)})
    assert (ctx.role, ctx.node_rank, ctx.is_chief) == expected
    assert (ctx.pool, ctx.index, ctx.trial_id, ctx.world_size) == (pool, index, "TRIAL_ID", 7)
    assert (ctx.master_addr, ctx.master_port) == ("cmle-training-workerpool0-ab-0", 2222)
    assert ctx.cluster == {n: DOC_CLUSTER[f"workerpool{n}"] for n in range(4)}


def test_the_sdk_fixture_without_a_job_key() -> None:
    ctx = parse_env({"CLUSTER_SPEC": SDK_FIXTURE})
    assert (ctx.role, ctx.pool, ctx.index, ctx.node_rank, ctx.world_size) == ("worker", 1, 0, 1, 2)
    assert (ctx.trial_id, ctx.job, ctx.is_chief) == (None, None, False)
    assert ctx.master_addr == "cmle-training-workerpool0-1d969d3ba6-0"


def test_the_documented_tf_config_alone() -> None:
    ctx = parse_env({"TF_CONFIG": json.dumps(DOC_TF_CONFIG)})
    assert (ctx.role, ctx.pool, ctx.index, ctx.trial_id, ctx.is_chief) == (
        "worker",
        1,
        0,
        "1",
        False,
    )
    assert ctx.master_addr == "training-workerpool0-[ID]-0"
    assert ctx.cluster == {
        0: DOC_TF_CONFIG["cluster"]["chief"],
        1: DOC_TF_CONFIG["cluster"]["worker"],
        2: DOC_TF_CONFIG["cluster"]["ps"],
    }
