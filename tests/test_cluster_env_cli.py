"""``trainpool env``: the environment a replica would get, printed before a launch."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from trainpool.cli import app
from trainpool.cluster_env import build_env, vertex_hosts

SPEC = {
    "workerPoolSpecs": [{"replicaCount": 1}, {"replicaCount": 2}],
    "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/o"},
}


def test_json_is_exactly_what_build_env_gives(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"customJobSpec": SPEC}))
    result = CliRunner().invoke(
        app, ["env", str(path), "--replica", "workerpool1-1", "--trial", "3", "--json"]
    )
    assert result.exit_code == 0, result.output
    expected = build_env(
        SPEC,
        1,
        1,
        hosts=vertex_hosts(SPEC),
        trial_id="3",
        job_id="JOB_ID",
        project="PROJECT_NUMBER",
        region="us-central1",
    )
    assert json.loads(result.output) == expected


def test_plain_lines_and_local_ports(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(json.dumps(SPEC))
    result = CliRunner().invoke(app, ["env", str(path), "--replica", "workerpool0-0", "--local"])
    assert result.exit_code == 0, result.output
    lines = dict(line.split("=", 1) for line in result.output.splitlines())
    assert (lines["MASTER_ADDR"], lines["RANK"], lines["WORLD_SIZE"]) == ("127.0.0.1", "0", "3")
    assert "CLOUD_ML_TRIAL_ID" not in lines


def test_bad_replica_and_absent_pool_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(SPEC))
    bad = CliRunner().invoke(app, ["env", str(path), "--replica", "worker-1"])
    assert bad.exit_code == 2
    assert "--replica: 'worker-1'; accepted: workerpool<0-3>-<index>" in bad.output
    absent = CliRunner().invoke(app, ["env", str(path), "--replica", "workerpool3-0"])
    assert absent.exit_code == 2
    assert "pool: 3 has no replicas in this job; accepted: one of [0, 1]" in absent.output
