"""Host names and ports for every replica: Vertex's naming, or free loopback ports."""

from __future__ import annotations

import socket
from contextlib import ExitStack
from typing import Any

from trainpool.cluster_env.layout import pool_specs, replica_count

VERTEX_PORT = 2222
"""The port Vertex gives every replica in CLUSTER_SPEC."""


def _counts(job_spec: dict[str, Any]) -> dict[int, int]:
    """Replica count of every non-empty pool, by pool number."""
    counts = {
        pool: replica_count(spec or {}, pool) for pool, spec in enumerate(pool_specs(job_spec))
    }
    return {pool: count for pool, count in counts.items() if count > 0}


def vertex_hosts(job_spec: dict[str, Any], job_hash: str = "ab12cd34ef") -> dict[int, list[str]]:
    """Vertex-style ``cmle-training-workerpool<N>-<hash>-<i>:2222`` for every replica."""
    return {
        pool: [f"cmle-training-workerpool{pool}-{job_hash}-{i}:{VERTEX_PORT}" for i in range(n)]
        for pool, n in _counts(job_spec).items()
    }


def local_hosts(job_spec: dict[str, Any], address: str = "127.0.0.1") -> dict[int, list[str]]:
    """``127.0.0.1:<port>`` for every replica, all ports distinct and free when chosen."""
    counts = _counts(job_spec)
    with ExitStack() as stack:
        ports: list[int] = []
        for _ in range(sum(counts.values())):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((address, 0))
            ports.append(sock.getsockname()[1])
    hosts: dict[int, list[str]] = {}
    for pool, n in counts.items():
        hosts[pool] = [f"{address}:{ports.pop(0)}" for _ in range(n)]
    return hosts


def split_host(host: str) -> tuple[str, int]:
    """``"host:port"`` → ``("host", port)``; a clear error for anything else."""
    name, sep, port = host.rpartition(":")
    if not sep or not name or not port.isdigit():
        raise ValueError(f"host: {host!r} is not NAME:PORT; accepted: e.g. 10.0.0.2:2222")
    return name, int(port)
