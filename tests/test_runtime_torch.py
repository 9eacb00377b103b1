"""runtime.torch: three real processes with cluster_env's environment run a DDP step over gloo.

This file is also the replica program: run as a script, it joins the process group,
takes one DDP step on its own data and writes what it saw as JSON to argv[1].
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainpool.cluster_env import ReplicaContext, build_env, local_hosts, parse_env
from trainpool.cluster_env.layout import replicas
from trainpool.runtime.torch import BUCKET_CAP_ENV, bucket_cap_mb, process_rank

ROOT = Path(__file__).resolve().parents[1]


def replica_main(out: str) -> None:
    import torch

    from trainpool.runtime import context
    from trainpool.runtime import torch as rt_torch

    info = rt_torch.init_process_group(context(), timeout_s=60)
    torch.manual_seed(0)
    model = rt_torch.ddp(torch.nn.Linear(3, 1), info)
    inputs = torch.full((2, 3), float(info.rank + 1))
    model(inputs).sum().backward()
    report = {
        "rank": info.rank,
        "world": info.world_size,
        "backend": info.backend,
        "bucket_bytes": model.bucket_bytes_cap,
        "grad": model.module.weight.grad.tolist()[0],
        "weight": model.module.weight.tolist()[0],
    }
    Path(out).write_text(json.dumps(report))
    torch.distributed.destroy_process_group()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_three_replicas_agree_on_ranks_and_averaged_gradients(tmp_path: Path) -> None:
    import torch

    spec = {"workerPoolSpecs": [{"replicaCount": 1}, {"replicaCount": 2}]}
    hosts = local_hosts(spec)
    procs = []
    for pool, index in replicas(spec):
        env = build_env(spec, pool, index, hosts=hosts, job_id="1", project="p", region="r")
        child = os.environ | env | {"PYTHONPATH": str(ROOT), BUCKET_CAP_ENV: "64"}
        out = tmp_path / f"workerpool{pool}-{index}.json"
        procs.append(subprocess.Popen([sys.executable, __file__, str(out)], env=child))
    assert [p.wait(timeout=100) for p in procs] == [0, 0, 0]
    seen = [
        json.loads((tmp_path / f"workerpool{p}-{i}.json").read_text()) for p, i in replicas(spec)
    ]
    assert [(s["rank"], s["world"], s["backend"]) for s in seen] == [
        (0, 3, "gloo"),
        (1, 3, "gloo"),
        (2, 3, "gloo"),
    ]
    assert {s["bucket_bytes"] for s in seen} == {64 * 1024 * 1024}
    # d/dW sum(W x + b) over 2 rows of (rank + 1) is 2 * (rank + 1); DDP averages over ranks.
    expected = torch.tensor([2.0 * (1 + 2 + 3) / 3] * 3)
    for s in seen:
        assert torch.allclose(torch.tensor(s["grad"]), expected)
        assert s["weight"] == seen[0]["weight"]


def test_process_rank_multiplies_nodes_by_local_processes() -> None:
    ctx = ReplicaContext(role="worker", pool=1, index=1, node_rank=2, world_size=3, is_chief=False)
    assert [process_rank(ctx, r, 4) for r in range(4)] == [(8, 12), (9, 12), (10, 12), (11, 12)]
    with pytest.raises(ValueError, match="local_rank: 4 with local_processes 4"):
        process_rank(ctx, 4, 4)
    reducer = ReplicaContext(
        role="reduction_server", pool=2, index=0, node_rank=None, world_size=3, is_chief=False
    )
    with pytest.raises(ValueError, match="workerpool2-0 \\(reduction_server\\) is not in"):
        process_rank(reducer, 0, 1)


def test_bucket_cap_from_the_tuning_env() -> None:
    assert bucket_cap_mb({}) is None
    assert bucket_cap_mb({BUCKET_CAP_ENV: "64"}) == 64.0
    with pytest.raises(ValueError, match=f"{BUCKET_CAP_ENV}: '-1'; accepted: a number"):
        bucket_cap_mb({BUCKET_CAP_ENV: "-1"})


@pytest.mark.timeout(60)
def test_single_process_without_master_gets_a_private_rendezvous() -> None:
    import torch.distributed as dist

    from trainpool.runtime.torch import DistInfo, init_process_group

    info = init_process_group(parse_env({}), timeout_s=30)
    try:
        assert info == DistInfo(rank=0, world_size=1, local_rank=0, backend="gloo", device="cpu")
        assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    replica_main(sys.argv[1])
