"""Plan and size 10,000 random cluster requests; print requests per second.

Run: python3 benchmarks/bench_plan.py [N]
"""

from __future__ import annotations

import random
import sys
import time
from typing import Any

from trainpool.plan import PlanError, plan_cluster

GPU_POOLS: list[dict[str, Any]] = [
    {
        "machine_type": "n1-highmem-96",
        "accelerator_type": "NVIDIA_TESLA_V100",
        "accelerator_count": 8,
    },
    {
        "machine_type": "n1-standard-16",
        "accelerator_type": "NVIDIA_TESLA_T4",
        "accelerator_count": 2,
    },
    {"machine_type": "a2-highgpu-4g"},
    {"machine_type": "a2-megagpu-16g"},
    {"machine_type": "g2-standard-48"},
    {
        "machine_type": "n1-standard-16",
        "accelerator_type": "NVIDIA_TESLA_V100",
        "accelerator_count": 1,
    },
]


def random_request(rng: random.Random) -> dict[str, Any]:
    pool = rng.choice(GPU_POOLS)
    request: dict[str, Any] = {
        "image_uri": "us-docker.pkg.dev/p/r/trainer:1",
        "primary": dict(pool),
        "workers": {**pool, "replica_count": rng.randint(1, 64)},
    }
    if rng.random() < 0.7:
        request["reduction_server"] = {"machine_type": rng.choice(["n1-highcpu-16", "auto"])}
    if rng.random() < 0.3:
        request["evaluators"] = {"machine_type": "n1-standard-8"}
    return request


def main(count: int = 10_000) -> None:
    rng = random.Random(0)
    requests = [random_request(rng) for _ in range(count)]
    plan_cluster(requests[0] if "reduction_server" in requests[0] else requests[1])
    refused = reducers = 0
    start = time.perf_counter()
    for request in requests:
        try:
            plan = plan_cluster(request)
        except PlanError:
            refused += 1
            continue
        reducers += plan.reduction_server["replicaCount"] if plan.reduction_server else 0
    elapsed = time.perf_counter() - start
    print(f"requests: {count} (refused {refused}), reducers planned: {reducers}")
    print(f"elapsed: {elapsed:.2f} s, {count / elapsed:,.0f} requests/second")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
