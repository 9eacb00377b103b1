"""The client side both load benchmarks share (``bench_load.py``, ``bench_rest.py``).

Each client process makes its CustomJob calls the same way, so their figures compare: it
opens its channel, says ``ready`` and waits for the parent's go (a line on stdin), then for
each job a Create, a Get of an earlier job and a List of its own label's jobs (a page of
10), each call timed by kind.
"""

from __future__ import annotations

import sys
import time
from typing import Any


class TimedCalls:
    """``client``'s calls under ``parent``, each one's seconds kept by kind in ``times``."""

    def __init__(self, client: Any, parent: str, label: str) -> None:
        self.client, self.parent, self.label = client, parent, label
        self.times: dict[str, list[float]] = {"create": [], "get": [], "list": []}
        self.mine = f'labels.client="{label}"'

    def ready(self) -> None:
        """Open the channel (one List), say ``ready``, wait for the go."""
        self.client.list_custom_jobs(request={"parent": self.parent, "page_size": 1})
        print("ready", flush=True)
        sys.stdin.readline()

    def timed(self, kind: str, call: Any, **request: Any) -> Any:
        began = time.perf_counter()
        result = call(request=request)
        self.times[kind].append(time.perf_counter() - began)
        return result

    def load(self, job: dict[str, Any], jobs: int) -> list[str]:
        """``jobs`` rounds of Create ``job``, Get an earlier one, List this label's; the
        jobs' names."""
        names: list[str] = []
        client = self.client
        for i in range(jobs):
            made = self.timed(
                "create", client.create_custom_job, parent=self.parent, custom_job=job
            )
            names.append(made.name)
            self.timed("get", client.get_custom_job, name=names[i // 2])
            self.timed(
                "list", client.list_custom_jobs, parent=self.parent, filter=self.mine, page_size=10
            )
        return names


def percentile(values: list[float], share: float) -> float:
    """The ``share`` percentile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]
