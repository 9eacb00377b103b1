"""Parse a replica's environment back into one typed view: ``parse_env() -> ReplicaContext``.

Accepts every observed variant: ``task.trial`` missing, ``""`` or ``"3"``; ``job`` as an
object or a JSON string; ``chief`` or ``master``; extra keys such as ``open_ports``;
TF_CONFIG alone (hand-written clusters); nothing at all (a plain local single process).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainpool.cluster_env.addresses import split_host
from trainpool.cluster_env.layout import node_ranks, pool_role
from trainpool.errors import InputError

_TF_POOLS = {"chief": 0, "master": 0, "worker": 1, "ps": 2, "evaluator": 3}


class EnvError(InputError):
    """A variable of the replica environment is malformed."""


@dataclass(frozen=True)
class ReplicaContext:
    """What one replica knows about itself and its cluster.

    ``node_rank`` and ``world_size`` count nodes (replicas), as Vertex does; ``node_rank``
    is None for a replica outside the training world (a Reduction Server reducer).
    """

    role: str
    pool: int
    index: int
    node_rank: int | None
    world_size: int
    is_chief: bool
    trial_id: str | None = None
    master_addr: str | None = None
    master_port: int | None = None
    model_dir: str | None = None
    checkpoint_dir: str | None = None
    tensorboard_log_dir: str | None = None
    job_id: str | None = None
    project: str | None = None
    region: str | None = None
    metric_file: str | None = None
    cluster: dict[int, list[str]] = field(default_factory=dict)
    job: dict[str, Any] | None = None

    @property
    def replica_name(self) -> str:
        """``workerpool<pool>-<index>``, the name Vertex shows in logs."""
        return f"workerpool{self.pool}-{self.index}"


def _quote(value: str, limit: int = 200) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


def _json_var(environ: Mapping[str, str], name: str) -> dict[str, Any] | None:
    raw = environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as err:
        message = f"{name} is not valid JSON ({err.msg} at char {err.pos}): {_quote(raw)}"
        raise EnvError(message) from None
    if not isinstance(value, dict):
        raise EnvError(f"{name} is JSON but not an object: {_quote(raw)}")
    return value


def _int_var(environ: Mapping[str, str], name: str) -> int | None:
    raw = environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise EnvError(f"{name}: {raw!r} is not an integer") from None


def _task(spec: dict[str, Any], name: str) -> tuple[Any, int, str | None]:
    task = spec.get("task")
    if not isinstance(task, dict) or "type" not in task:
        raise EnvError(f"{name}: task {task!r} has no type; accepted: {{'type': ..., 'index': N}}")
    try:
        index = int(task.get("index", 0))
    except (TypeError, ValueError):
        raise EnvError(f"{name}: task.index {task.get('index')!r} is not an integer") from None
    trial = task.get("trial")
    return task["type"], index, None if trial in (None, "") else str(trial)


def _job(spec: dict[str, Any] | None) -> dict[str, Any] | None:
    job = (spec or {}).get("job")
    if isinstance(job, str):
        try:
            job = json.loads(job)
        except json.JSONDecodeError:
            return None
    return job if isinstance(job, dict) else None


def _from_cluster_spec(spec: dict[str, Any]) -> tuple[int, int, str | None, dict[int, list[str]]]:
    kind, index, trial = _task(spec, "CLUSTER_SPEC")
    if not (isinstance(kind, str) and kind.startswith("workerpool") and kind[10:].isdigit()):
        raise EnvError(f"CLUSTER_SPEC: task.type {kind!r}; accepted: workerpool0..workerpool3")
    cluster = spec.get("cluster") or {}
    hosts = {int(k[10:]): list(v) for k, v in cluster.items() if k[10:].isdigit()}
    return int(kind[10:]), index, trial, hosts


def _from_tf_config(spec: dict[str, Any]) -> tuple[int, int, str | None, dict[int, list[str]]]:
    kind, index, trial = _task(spec, "TF_CONFIG")
    if kind not in _TF_POOLS:
        raise EnvError(f"TF_CONFIG: task.type {kind!r}; accepted: one of {sorted(_TF_POOLS)}")
    cluster = spec.get("cluster") or {}
    hosts = {_TF_POOLS[k]: list(v) for k, v in cluster.items() if k in _TF_POOLS}
    return _TF_POOLS[kind], index, trial, hosts


def _job_from_hosts(hosts: dict[int, list[str]]) -> dict[str, Any]:
    """The pool layout the host lists imply; one primary replica when there are none."""
    if not hosts:
        return {"workerPoolSpecs": [{"replicaCount": 1}]}
    pools: list[dict[str, Any]] = [{} for _ in range(max(hosts, default=0) + 1)]
    for pool, members in hosts.items():
        pools[pool] = {"replicaCount": len(members)}
    return {"workerPoolSpecs": pools}


def _layout(job: dict[str, Any] | None, hosts: dict[int, list[str]]) -> dict[str, Any]:
    """The pools as the replicas see them: who exists comes from the host lists (the job's
    spec may be partial or of another shape, as observed on Vertex), what pool 2 runs (a
    Reduction Server or parameter servers) from the job's spec."""
    job = job or {}
    pools = job.get("workerPoolSpecs", job.get("worker_pool_specs"))
    if not hosts:
        return job if isinstance(pools, list) and pools else _job_from_hosts(hosts)
    layout = _job_from_hosts(hosts)
    if isinstance(pools, list):
        for number, pool in enumerate(layout["workerPoolSpecs"]):
            given = pools[number] if number < len(pools) else None
            if pool and isinstance(given, dict):
                for key in ("containerSpec", "container_spec"):
                    if key in given:
                        pool[key] = given[key]
    return layout


def parse_env(environ: Mapping[str, str] | None = None) -> ReplicaContext:
    """The typed view of ``environ`` (default ``os.environ``); EnvError on malformed values."""
    env = os.environ if environ is None else environ
    cluster_spec = _json_var(env, "CLUSTER_SPEC")
    tf_config = _json_var(env, "TF_CONFIG")
    if cluster_spec is not None:
        pool, index, trial, hosts = _from_cluster_spec(cluster_spec)
    elif tf_config is not None:
        pool, index, trial, hosts = _from_tf_config(tf_config)
    else:
        pool, index, trial, hosts = 0, 0, None, {}
    if trial is None and tf_config is not None:
        trial = _task(tf_config, "TF_CONFIG")[2]
    trial = trial or env.get("CLOUD_ML_TRIAL_ID") or None
    job = _job(cluster_spec) or _job(tf_config)
    layout = _layout(job, hosts)
    ranks = node_ranks(layout)
    rank = _int_var(env, "RANK")
    world = _int_var(env, "WORLD_SIZE")
    master_addr, master_port = env.get("MASTER_ADDR") or None, _int_var(env, "MASTER_PORT")
    if master_addr is None and hosts.get(0):
        master_addr, master_port = split_host(hosts[0][0])
    return ReplicaContext(
        role=pool_role(layout, pool),
        pool=pool,
        index=index,
        node_rank=rank if rank is not None else ranks.get((pool, index)),
        world_size=world if world is not None else max(len(ranks), 1),
        # TF_CONFIG without a chief/master task: worker 0 is the chief (MWMS guide).
        is_chief=pool == 0 or (cluster_spec is None and 0 not in hosts and (pool, index) == (1, 0)),
        trial_id=trial,
        master_addr=master_addr,
        master_port=master_port,
        model_dir=env.get("AIP_MODEL_DIR") or None,
        checkpoint_dir=env.get("AIP_CHECKPOINT_DIR") or None,
        tensorboard_log_dir=env.get("AIP_TENSORBOARD_LOG_DIR") or None,
        job_id=env.get("CLOUD_ML_JOB_ID") or None,
        project=env.get("CLOUD_ML_PROJECT_ID") or None,
        region=env.get("CLOUD_ML_REGION") or None,
        metric_file=env.get("CLOUD_ML_HP_METRIC_FILE") or None,
        cluster=hosts,
        job=job,
    )
