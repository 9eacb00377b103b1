"""PyTorch glue: a process group from the replica context, and DDP with the tuned bucket size.

Vertex's WORLD_SIZE and RANK count nodes. A node that runs several processes (one per
GPU) must turn them into process ranks itself: global rank = node rank × local
processes + local rank, world = nodes × local processes. Getting this wrong gives
duplicate ranks and a hang (Lightning #13374). torch is imported only when called.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from trainpool.cluster_env import ReplicaContext, parse_env

BUCKET_CAP_ENV = "TRAINPOOL_DDP_BUCKET_CAP_MB"
"""Set by the planner's tuning env (64 MB is Vertex's advice for Reduction Server)."""


@dataclass(frozen=True)
class DistInfo:
    """Where this process sits in the process group."""

    rank: int
    world_size: int
    local_rank: int
    backend: str
    device: str


def process_rank(ctx: ReplicaContext, local_rank: int, local_processes: int) -> tuple[int, int]:
    """``(global rank, world size)`` of local process ``local_rank`` of ``local_processes``."""
    if local_processes < 1 or not 0 <= local_rank < local_processes:
        raise ValueError(
            f"local_rank: {local_rank!r} with local_processes {local_processes!r}; "
            "accepted: local_processes >= 1 and 0 <= local_rank < local_processes"
        )
    if ctx.node_rank is None:
        raise ValueError(
            f"{ctx.replica_name} ({ctx.role}) is not in the training world; accepted: "
            "a replica of pools 0, 1 or 3 (or 2 when it holds parameter servers)"
        )
    return ctx.node_rank * local_processes + local_rank, ctx.world_size * local_processes


def bucket_cap_mb(environ: Mapping[str, str] | None = None) -> float | None:
    """The DDP bucket size from the tuning env, or None when it is not set."""
    env = os.environ if environ is None else environ
    raw = env.get(BUCKET_CAP_ENV)
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise ValueError(f"{BUCKET_CAP_ENV}: {raw!r}; accepted: a number of megabytes > 0")
    return value


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def init_process_group(
    ctx: ReplicaContext | None = None,
    *,
    local_rank: int = 0,
    local_processes: int = 1,
    backend: str | None = None,
    timeout_s: float = 300.0,
) -> DistInfo:
    """Join the job's process group: gloo on CPU, NCCL when CUDA is available.

    A single-replica job without MASTER_ADDR gets a private loopback rendezvous, so
    parallel trials never collide on a port.
    """
    import torch
    import torch.distributed as dist

    ctx = parse_env() if ctx is None else ctx
    rank, world = process_rank(ctx, local_rank, local_processes)
    cuda = torch.cuda.is_available()
    chosen = backend or ("nccl" if cuda else "gloo")
    if ctx.master_addr and ctx.master_port:
        address, port = ctx.master_addr, ctx.master_port
    elif world == 1:
        address, port = "127.0.0.1", _free_port()
    else:
        raise ValueError(
            f"{ctx.replica_name}: world size {world} but no MASTER_ADDR/MASTER_PORT and no "
            "CLUSTER_SPEC; accepted: the environment cluster_env.build_env gives a replica"
        )
    dist.init_process_group(
        chosen,
        init_method=f"tcp://{address}:{port}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=timeout_s),
    )
    device = "cpu"
    if cuda and chosen == "nccl":
        torch.cuda.set_device(local_rank)
        device = f"cuda:{local_rank}"
    return DistInfo(rank, world, local_rank, chosen, device)


def ddp(model: Any, info: DistInfo, environ: Mapping[str, str] | None = None) -> Any:
    """Wrap ``model`` in DistributedDataParallel, with the tuning env's bucket size if set."""
    from torch.nn.parallel import DistributedDataParallel

    options: dict[str, Any] = {}
    cap = bucket_cap_mb(environ)
    if cap is not None:
        options["bucket_cap_mb"] = cap
    if info.device.startswith("cuda"):
        options["device_ids"] = [info.local_rank]
    return DistributedDataParallel(model.to(info.device), **options)
