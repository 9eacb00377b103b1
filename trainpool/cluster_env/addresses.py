"""Host names and ports for every replica: Vertex's naming, or free loopback ports."""

from __future__ import annotations

import random
import socket
import threading
from collections import deque
from contextlib import ExitStack
from pathlib import Path
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


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
"""Linux's range of ports it hands out by itself (Linux's default: 32768-60999)."""

LOWEST_PORT = 10000
"""The lowest port :func:`local_hosts` gives (below it sit many well-known services)."""

_given: deque[int] = deque(maxlen=4096)
"""Ports this process gave lately, not given again while another job may still hold them."""
_given_lock = threading.Lock()


def ephemeral_range(path: Path = EPHEMERAL_RANGE) -> tuple[int, int]:
    """The ports the kernel picks for ``bind(0)`` and for the source of an outgoing connection."""
    try:
        low, high = (int(part) for part in path.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default; macOS and Windows start higher (49152)
    return low, high


def free_ports(
    count: int, address: str = "127.0.0.1", *, rng: random.Random | None = None
) -> list[int]:
    """``count`` distinct ports on ``address``, free now and outside the ephemeral range.

    A replica binds its port seconds after it is chosen (its Python is made first, its
    packages installed). A port of the ephemeral range may be taken in between by any
    program's outgoing connection, or by the replica's own connection to it: a TCP client
    that connects to a loopback port nobody listens on yet can get that same port as its
    source and connect to itself, and a PyTorch worker doing so waits for a chief that can
    no longer listen there until its rendezvous times out. The kernel never hands out a
    port below the ephemeral range by itself, so only a program that asks for it by number
    can take it; these start at a random place, and no port is given twice in a row.
    """
    low = LOWEST_PORT
    high = ephemeral_range()[0] - 1
    if high - low < count:
        raise OSError(f"no free ports: the ephemeral range starts at {high + 1}")
    rng = rng or random.Random()
    start = rng.randrange(low, high + 1)
    span = high - low + 1
    ports: list[int] = []
    with _given_lock, ExitStack() as stack:
        for step in range(span):
            port = low + (start - low + step) % span
            if port in _given:
                continue
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            try:
                sock.bind((address, port))  # without SO_REUSEADDR: refused while in TIME_WAIT too
            except OSError:
                continue
            ports.append(port)
            if len(ports) == count:
                _given.extend(ports)
                return ports
    raise OSError(f"no {count} free ports on {address} between {low} and {high}")


def local_hosts(job_spec: dict[str, Any], address: str = "127.0.0.1") -> dict[int, list[str]]:
    """``127.0.0.1:<port>`` for every replica, all ports distinct and free when chosen
    (see :func:`free_ports`)."""
    counts = _counts(job_spec)
    ports = free_ports(sum(counts.values()), address)
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
