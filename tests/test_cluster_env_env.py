"""build_env: golden tests against the seed's CLUSTER_SPEC and TF_CONFIG, and bad input."""

from __future__ import annotations

import json
import random
import socket
from pathlib import Path
from typing import Any

import pytest

from trainpool.cluster_env import addresses, build_env, local_hosts, vertex_hosts

RS = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
SETTINGS: dict[str, Any] = {"job_id": "4711", "project": "123456789012", "region": "us-central1"}


def pools(*counts: int, reducers: bool = False) -> dict[str, Any]:
    specs: list[dict[str, Any]] = [{"replicaCount": n} if n else {} for n in counts]
    if reducers:
        specs[2]["containerSpec"] = {"imageUri": RS}
    return {"workerPoolSpecs": specs}


def test_cluster_spec_matches_the_documented_example() -> None:
    """Seed 000: pools 1, 2, 2 (parameter servers) and 3 evaluators, primary's view."""
    spec = pools(1, 2, 2, 3)
    env = build_env(
        spec,
        0,
        0,
        hosts=vertex_hosts(spec, "ab"),
        trial_id="TRIAL_ID",
        job_as_dict=True,
        **SETTINGS,
    )
    documented = (
        '{ "cluster":{ "workerpool0":[ "cmle-training-workerpool0-ab-0:2222" ], "workerpool1":[ '
        '"cmle-training-workerpool1-ab-0:2222", "cmle-training-workerpool1-ab-1:2222" ], '
        '"workerpool2":[ "cmle-training-workerpool2-ab-0:2222", '
        '"cmle-training-workerpool2-ab-1:2222" ], "workerpool3":[ '
        '"cmle-training-workerpool3-ab-0:2222", '
        '"cmle-training-workerpool3-ab-1:2222", "cmle-training-workerpool3-ab-2:2222" ] }, '
        '"environment":"cloud", "task":{ "type":"workerpool0", "index":0, "trial":"TRIAL_ID" }, '
        '"job": {} }'
    )
    expected = json.loads(documented) | {"job": spec}
    assert json.loads(env["CLUSTER_SPEC"]) == expected
    assert list(json.loads(env["CLUSTER_SPEC"])) == list(expected)


def test_tf_config_matches_the_documented_example() -> None:
    """Seed 000: chief, two workers and a parameter server; worker 0 of trial 1.

    ``task.cloud`` (an opaque Vertex id) is not emitted; everything else is.
    """
    spec = pools(1, 2, 1)
    hosts = {
        p: [f"training-workerpool{p}-[ID_STRING_1]-{i}:2222" for i in range(n)]
        for p, n in {0: 1, 1: 2, 2: 1}.items()
    }
    env = build_env(spec, 1, 0, hosts=hosts, trial_id="1", job_as_dict=True, **SETTINGS)
    expected = {
        "cluster": {
            "chief": ["training-workerpool0-[ID_STRING_1]-0:2222"],
            "ps": ["training-workerpool2-[ID_STRING_1]-0:2222"],
            "worker": [
                "training-workerpool1-[ID_STRING_1]-0:2222",
                "training-workerpool1-[ID_STRING_1]-1:2222",
            ],
        },
        "environment": "cloud",
        "job": spec,
        "task": {"index": 0, "trial": "1", "type": "worker"},
    }
    assert env["TF_CONFIG"] == json.dumps(expected, separators=(",", ":"))


@pytest.mark.parametrize(
    ("pool", "index", "task"), [(0, 0, "chief"), (1, 0, "worker"), (1, 1, "worker")]
)
def test_tf_config_matches_the_mwms_guide(pool: int, index: int, task: str) -> None:
    """Seed 002: one chief and two workers, machines 1 to 3."""
    spec = pools(1, 2)
    hosts = {0: ["host1:2222"], 1: ["host2:2222", "host3:2222"]}
    config = json.loads(build_env(spec, pool, index, hosts=hosts, **SETTINGS)["TF_CONFIG"])
    assert config["cluster"] == {"chief": ["host1:2222"], "worker": ["host2:2222", "host3:2222"]}
    assert config["task"] == {"type": task, "index": index}


def test_whole_env_of_a_worker_in_a_sweep() -> None:
    spec = pools(1, 2) | {"baseOutputDirectory": {"outputUriPrefix": "gs://bkt/runs/"}}
    env = build_env(
        spec, 1, 1, hosts=vertex_hosts(spec), trial_id=3, metric_file="/tmp/m/3.metrics", **SETTINGS
    )
    job = json.dumps(spec, separators=(",", ":"))
    cluster = {
        "workerpool0": ["cmle-training-workerpool0-ab12cd34ef-0:2222"],
        "workerpool1": [
            "cmle-training-workerpool1-ab12cd34ef-0:2222",
            "cmle-training-workerpool1-ab12cd34ef-1:2222",
        ],
    }
    tf_cluster = {"chief": cluster["workerpool0"], "worker": cluster["workerpool1"]}
    compact = (",", ":")
    assert env == {
        "CLUSTER_SPEC": json.dumps(
            {
                "cluster": cluster,
                "environment": "cloud",
                "task": {"type": "workerpool1", "index": 1, "trial": "3"},
                "job": job,
            },
            separators=compact,
        ),
        "TF_CONFIG": json.dumps(
            {
                "cluster": tf_cluster,
                "environment": "cloud",
                "job": job,
                "task": {"index": 1, "trial": "3", "type": "worker"},
            },
            separators=compact,
        ),
        "MASTER_ADDR": "cmle-training-workerpool0-ab12cd34ef-0",
        "MASTER_PORT": "2222",
        "WORLD_SIZE": "3",
        "RANK": "2",
        "AIP_MODEL_DIR": "gs://bkt/runs/3/model/",
        "AIP_CHECKPOINT_DIR": "gs://bkt/runs/3/checkpoints/",
        "AIP_TENSORBOARD_LOG_DIR": "gs://bkt/runs/3/logs/",
        "CLOUD_ML_JOB_ID": "4711",
        "CLOUD_ML_PROJECT_ID": "123456789012",
        "CLOUD_ML_REGION": "us-central1",
        "CLOUD_ML_TRIAL_ID": "3",
        "CLOUD_ML_HP_METRIC_FILE": "/tmp/m/3.metrics",
    }


def test_single_replica_gets_no_tf_config_and_no_torch_variables() -> None:
    spec = pools(1)
    env = build_env(spec, 0, 0, hosts=vertex_hosts(spec), trial_id="", **SETTINGS)
    assert sorted(env) == [
        "CLOUD_ML_JOB_ID",
        "CLOUD_ML_PROJECT_ID",
        "CLOUD_ML_REGION",
        "CLUSTER_SPEC",
    ]
    assert json.loads(env["CLUSTER_SPEC"])["task"] == {"type": "workerpool0", "index": 0}


def test_master_name_evaluator_and_reducers() -> None:
    spec = pools(1, 1, 2, 1, reducers=True)
    hosts = vertex_hosts(spec)
    primary = build_env(spec, 0, 0, hosts=hosts, chief_name="master", **SETTINGS)
    config = json.loads(primary["TF_CONFIG"])
    assert config["cluster"] == {"master": hosts[0], "worker": hosts[1]}
    assert config["task"] == {"index": 0, "type": "master"}
    evaluator = build_env(spec, 3, 0, hosts=hosts, **SETTINGS)
    assert json.loads(evaluator["TF_CONFIG"])["task"] == {"index": 0, "type": "evaluator"}
    assert (evaluator["WORLD_SIZE"], evaluator["RANK"]) == ("3", "2")
    reducer = build_env(spec, 2, 1, hosts=hosts, **SETTINGS)
    assert "TF_CONFIG" not in reducer and "RANK" not in reducer
    assert json.loads(reducer["CLUSTER_SPEC"])["cluster"]["workerpool2"] == hosts[2]
    counted = build_env(spec, 2, 1, hosts=hosts, reducers_in_world=True, **SETTINGS)
    assert (counted["WORLD_SIZE"], counted["RANK"]) == ("5", "3")


def test_local_hosts_are_distinct_loopback_ports() -> None:
    spec = pools(1, 3, 0, 2)
    hosts = local_hosts(spec)
    assert sorted(hosts) == [0, 1, 3] and [len(hosts[p]) for p in (0, 1, 3)] == [1, 3, 2]
    every = [h for p in hosts for h in hosts[p]]
    assert all(h.startswith("127.0.0.1:") for h in every)
    assert len({h.rsplit(":", 1)[1] for h in every}) == 6


def test_local_ports_are_below_the_range_the_kernel_hands_out_by_itself() -> None:
    # a port of the ephemeral range can become the source port of any outgoing connection
    # (a worker's own connect to its not-yet-listening chief included) before the replica binds
    low, _ = addresses.ephemeral_range()
    ports = [int(h.rsplit(":", 1)[1]) for p in local_hosts(pools(1, 7)).values() for h in p]
    assert all(addresses.LOWEST_PORT <= port < low for port in ports), ports


def test_a_port_in_use_is_skipped_and_none_is_given_twice_in_a_row() -> None:
    rng = random.Random(7)
    start = random.Random(7).randrange(addresses.LOWEST_PORT, addresses.ephemeral_range()[0])
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", start))
        taken.listen()
        first = addresses.free_ports(3, rng=rng)
    assert start not in first and len(set(first)) == 3
    again = addresses.free_ports(3, rng=random.Random(7))
    assert not set(again) & set(first)


def test_no_room_below_the_ephemeral_range_is_a_clear_error(tmp_path: Path) -> None:
    narrow = tmp_path / "ip_local_port_range"
    narrow.write_text("10002\t60999\n")
    assert addresses.ephemeral_range(narrow) == (10002, 60999)
    assert addresses.ephemeral_range(tmp_path / "absent") == (32768, 60999)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(addresses, "ephemeral_range", lambda: (10002, 60999))
        with pytest.raises(OSError, match="no free ports: the ephemeral range starts at 10002"):
            addresses.free_ports(3)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"pool": 2}, "pool: 2 has no replicas in this job; accepted: one of [0, 1]"),
        ({"index": 2}, "index: 2 is out of range for workerpool1; accepted: 0..1"),
        ({"hosts": {0: ["a:1"], 1: ["b:1"]}}, "hosts[1]: ['b:1'] has 1 entries; accepted: 2"),
        ({"hosts": {0: ["a"], 1: ["b:1", "c:1"]}}, "host: 'a' is not NAME:PORT"),
        ({"trial_id": "1/2"}, "trial_id: '1/2' is not a trial id"),
        ({"chief_name": "boss"}, "chief_name: 'boss'; accepted: one of ['chief', 'master']"),
        ({"metric_file": "m.txt"}, "metric_file: 'm.txt' is not an absolute path"),
    ],
)
def test_bad_input_names_field_value_and_what_is_accepted(
    change: dict[str, Any], message: str
) -> None:
    spec = pools(1, 2)
    before = json.dumps(spec)
    args: dict[str, Any] = {"pool": 1, "index": 0, "hosts": vertex_hosts(spec)} | change
    with pytest.raises(ValueError) as err:
        build_env(spec, args.pop("pool"), args.pop("index"), **args, **SETTINGS)
    assert message in str(err.value)
    assert json.dumps(spec) == before


@pytest.mark.parametrize("primary", [{}, {"replicaCount": 0}])
def test_a_job_without_a_primary_is_a_value_error_naming_pool_0(primary: dict[str, Any]) -> None:
    spec = {"workerPoolSpecs": [primary, {"replicaCount": 2}]}
    with pytest.raises(ValueError) as err:
        build_env(spec, 1, 0, hosts=vertex_hosts(spec), **SETTINGS)
    assert f"workerPoolSpecs[0]: {primary!r} has no primary replica; accepted:" in str(err.value)
