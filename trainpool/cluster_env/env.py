"""The environment Vertex sets in one replica: CLUSTER_SPEC, TF_CONFIG, torch, AIP_*, CLOUD_ML_*."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from trainpool.cluster_env.addresses import split_host
from trainpool.cluster_env.layout import (
    get_key,
    is_reduction_server,
    node_ranks,
    pool_specs,
    replica_count,
    replicas,
)

CHIEF_NAMES = ("chief", "master")
TRIAL_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_COMPACT = (",", ":")
_TF_TYPES = {1: "worker", 2: "ps", 3: "evaluator"}


def _check(
    job_spec: dict[str, Any],
    pool: int,
    index: int,
    hosts: dict[int, list[str]],
    trial_id: str | None,
    chief_name: str,
    metric_file: str | None,
) -> None:
    """Refuse bad input with the field, the value and what is accepted."""
    counts = {p: replica_count(spec or {}, p) for p, spec in enumerate(pool_specs(job_spec))}
    present = sorted(p for p, n in counts.items() if n > 0)
    if counts.get(0, 0) == 0:
        raise ValueError(
            f"workerPoolSpecs[0]: {next(iter(pool_specs(job_spec)), None)!r} has no primary "
            "replica; accepted: a pool 0 with replicaCount 1 (Vertex needs a primary, "
            "and MASTER_ADDR is its host)"
        )
    if counts.get(pool, 0) == 0:
        raise ValueError(f"pool: {pool!r} has no replicas in this job; accepted: one of {present}")
    if not 0 <= index < counts[pool]:
        raise ValueError(
            f"index: {index!r} is out of range for workerpool{pool}; "
            f"accepted: 0..{counts[pool] - 1}"
        )
    for p in present:
        got = hosts.get(p, [])
        if len(got) != counts[p]:
            raise ValueError(
                f"hosts[{p}]: {got!r} has {len(got)} entries; accepted: {counts[p]} "
                f"HOST:PORT strings, one per replica of workerpool{p}"
            )
        for host in got:
            split_host(host)
    if trial_id is not None and not TRIAL_ID.match(trial_id):
        raise ValueError(
            f"trial_id: {trial_id!r} is not a trial id; accepted: letters, digits, - and _ "
            '(Vertex uses "1", "2", ...)'
        )
    if chief_name not in CHIEF_NAMES:
        raise ValueError(f"chief_name: {chief_name!r}; accepted: one of {list(CHIEF_NAMES)}")
    if metric_file is not None and not os.path.isabs(metric_file):
        raise ValueError(
            f"metric_file: {metric_file!r} is not an absolute path; accepted: an absolute path "
            "(cloudml-hypertune cannot create the directory of a bare file name)"
        )


def _task(kind: str, index: int, trial_id: str | None) -> dict[str, Any]:
    task: dict[str, Any] = {"type": kind, "index": index}
    if trial_id is not None:
        task["trial"] = trial_id
    return task


def _tf_config(
    job_spec: dict[str, Any],
    pool: int,
    index: int,
    hosts: dict[int, list[str]],
    trial_id: str | None,
    job: Any,
    chief_name: str,
) -> str:
    """TF_CONFIG: pool 0 chief/master, 1 worker, 2 ps (not reducers), 3 evaluator outside."""
    names = {0: chief_name, 1: "worker"}
    pools = pool_specs(job_spec)
    if len(pools) > 2 and not is_reduction_server(pools[2] or {}):
        names[2] = "ps"
    present = sorted({p for p, _ in replicas(job_spec)})
    cluster = {names[p]: hosts[p] for p in present if p in names}
    kind = chief_name if pool == 0 else _TF_TYPES[pool]
    config = {"cluster": cluster, "environment": "cloud", "job": job}
    config["task"] = _task(kind, index, trial_id)
    return json.dumps(config, separators=_COMPACT, sort_keys=True)


def output_dirs(job_spec: dict[str, Any], trial_id: str | None) -> dict[str, str]:
    """AIP_MODEL_DIR and friends from baseOutputDirectory, ``<trial>/`` inserted in a sweep."""
    base_dir = get_key(job_spec, "baseOutputDirectory", "base_output_directory") or {}
    base = str(get_key(base_dir, "outputUriPrefix", "output_uri_prefix") or "").rstrip("/")
    if not base:
        return {}
    if trial_id is not None:
        base = f"{base}/{trial_id}"
    return {
        "AIP_MODEL_DIR": f"{base}/model/",
        "AIP_CHECKPOINT_DIR": f"{base}/checkpoints/",
        "AIP_TENSORBOARD_LOG_DIR": f"{base}/logs/",
    }


def build_env(
    job_spec: dict[str, Any],
    pool: int,
    index: int,
    *,
    hosts: dict[int, list[str]],
    trial_id: str | int | None = None,
    job_id: str,
    project: str,
    region: str,
    job_as_dict: bool = False,
    chief_name: str = "chief",
    reducers_in_world: bool = False,
    metric_file: str | None = None,
) -> dict[str, str]:
    """The environment Vertex sets in replica ``index`` of pool ``pool`` of ``job_spec``.

    ``hosts`` maps every non-empty pool to its ``HOST:PORT`` list (``vertex_hosts`` or
    ``local_hosts``). ``trial_id`` marks a hyperparameter-tuning trial ("" or None: not
    a trial). ``job_as_dict`` puts the job spec in CLUSTER_SPEC/TF_CONFIG as an object
    instead of the JSON string observed on Vertex. ``chief_name`` is ``chief`` or
    ``master`` (TF_CONFIG only). Reduction Server replicas never get TF_CONFIG, and get
    no MASTER_ADDR/RANK (nor count in WORLD_SIZE) unless ``reducers_in_world``.
    """
    trial = None if trial_id is None or str(trial_id) == "" else str(trial_id)
    _check(job_spec, pool, index, hosts, trial, chief_name, metric_file)
    job: Any = job_spec if job_as_dict else json.dumps(job_spec, separators=_COMPACT)
    present = sorted({p for p, _ in replicas(job_spec)})
    cluster_spec = {
        "cluster": {f"workerpool{p}": hosts[p] for p in present},
        "environment": "cloud",
        "task": _task(f"workerpool{pool}", index, trial),
        "job": job,
    }
    env = {"CLUSTER_SPEC": json.dumps(cluster_spec, separators=_COMPACT)}
    distributed = len(replicas(job_spec)) > 1
    reducer = pool == 2 and is_reduction_server(pool_specs(job_spec)[2] or {})
    if distributed and not reducer:
        env["TF_CONFIG"] = _tf_config(job_spec, pool, index, hosts, trial, job, chief_name)
    ranks = node_ranks(job_spec, reducers_in_world)
    if distributed and (pool, index) in ranks:
        master, port = split_host(hosts[0][0])
        env.update(
            MASTER_ADDR=master,
            MASTER_PORT=str(port),
            WORLD_SIZE=str(len(ranks)),
            RANK=str(ranks[(pool, index)]),
        )
    env.update(output_dirs(job_spec, trial))
    env.update(CLOUD_ML_JOB_ID=job_id, CLOUD_ML_PROJECT_ID=project, CLOUD_ML_REGION=region)
    if trial is not None:
        env["CLOUD_ML_TRIAL_ID"] = trial
    if metric_file is not None:
        env["CLOUD_ML_HP_METRIC_FILE"] = metric_file
    return env
