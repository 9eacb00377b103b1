"""runtime.paths: no two trials and no two replicas write the same path."""

from __future__ import annotations

import itertools

import pytest

from trainpool.cluster_env import build_env, parse_env, vertex_hosts
from trainpool.cluster_env.layout import replicas
from trainpool.runtime import context
from trainpool.runtime.paths import job_dir, replica_dir, replica_path


def test_every_trial_and_replica_writes_its_own_path() -> None:
    spec = {
        "workerPoolSpecs": [{"replicaCount": 1}, {"replicaCount": 2}, {}, {"replicaCount": 1}],
        "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/sweep"},
    }
    hosts = vertex_hosts(spec)
    seen = {}
    for trial, (pool, index) in itertools.product(("1", "2"), replicas(spec)):
        env = build_env(
            spec, pool, index, hosts=hosts, trial_id=trial, job_id="j", project="p", region="r"
        )
        ctx = context(env)
        for kind in ("model", "checkpoints", "logs"):
            seen[(trial, pool, index, kind)] = replica_dir(kind, ctx)
    assert len(set(seen.values())) == len(seen) == 2 * 4 * 3
    assert seen[("2", 0, 0, "model")] == "gs://bkt/sweep/2/model/"
    assert seen[("2", 1, 1, "model")] == "gs://bkt/sweep/2/workertemp_workerpool1-1/model/"
    assert seen[("1", 3, 0, "logs")] == "gs://bkt/sweep/1/workertemp_workerpool3-0/logs/"


def test_default_base_when_vertex_sets_no_directory() -> None:
    chief = parse_env({"CLOUD_ML_TRIAL_ID": "5"})
    assert job_dir("checkpoints", chief, "./out") == "./out/5/checkpoints/"
    assert job_dir("model", parse_env({}), "gs://bkt/o/") == "gs://bkt/o/model/"
    with pytest.raises(ValueError, match="AIP_MODEL_DIR is not set; accepted: set baseOutput"):
        job_dir("model", chief)
    with pytest.raises(ValueError, match="kind: 'weights'; accepted: one of"):
        job_dir("weights", chief, "./out")


def test_replica_path_keeps_files_and_directories_apart() -> None:
    worker = parse_env({"CLUSTER_SPEC": '{"cluster":{},"task":{"type":"workerpool1","index":0}}'})
    assert (
        replica_path("/gcs/bkt/out/model.pt", worker)
        == "/gcs/bkt/out/workertemp_workerpool1-0/model.pt"
    )
    assert replica_path("/gcs/bkt/out/", parse_env({})) == "/gcs/bkt/out/"
