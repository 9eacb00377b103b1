"""The client side both load benchmarks share (``bench_load.py``, ``bench_rest.py``).

Each client process makes its CustomJob calls the same way, so their figures compare: it
opens its channel, says ``ready`` and waits for the parent's go (a line on stdin), then for
each job a Create, a Get of an earlier job and a List of its own label's jobs (a page of
10), each call timed by kind: its wall time, its own CPU (the calling thread's: the
transport's request and answer, made and read in it) and, where ``mapping`` counts it, the
part of that CPU spent mapping JSON to protos and back (the REST transport's
``json_format``: :func:`count_json_mapping`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

KINDS = ("create", "get", "list")
PARTS = ("times", "cpu", "mapping")
"""What :meth:`TimedCalls.figures` holds for each kind of call."""


def count_json_mapping() -> Callable[[], float]:
    """Time ``google.protobuf.json_format``'s ``Parse`` and ``MessageToJson`` from now on
    (what the generated REST transports call, by the module's attribute, for each request and
    answer); a function giving the seconds they have taken so far."""
    from google.protobuf import json_format

    spent = [0.0]

    def timing(function: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[0] += time.thread_time() - began

        return timed

    json_format.Parse = timing(json_format.Parse)
    json_format.MessageToJson = timing(json_format.MessageToJson)
    return lambda: spent[0]


class TimedCalls:
    """``client``'s calls under ``parent``, each one's seconds kept by kind: wall in
    ``times``, the calling thread's CPU in ``cpu``, and in ``mapping`` what ``mapping()``
    (cumulative seconds, :func:`count_json_mapping`) grew by."""

    def __init__(
        self, client: Any, parent: str, label: str, mapping: Callable[[], float] | None = None
    ) -> None:
        self.client, self.parent, self.label = client, parent, label
        self.times: dict[str, list[float]] = {kind: [] for kind in KINDS}
        self.cpu: dict[str, list[float]] = {kind: [] for kind in KINDS}
        self.mapping: dict[str, list[float]] = {kind: [] for kind in KINDS}
        self._mapped = mapping or (lambda: 0.0)
        self.mine = f'labels.client="{label}"'

    def ready(self) -> None:
        """Open the channel (one List), say ``ready``, wait for the go."""
        self.client.list_custom_jobs(request={"parent": self.parent, "page_size": 1})
        print("ready", flush=True)
        sys.stdin.readline()

    def timed(self, kind: str, call: Any, **request: Any) -> Any:
        began, cpu, mapped = time.perf_counter(), time.thread_time(), self._mapped()
        result = call(request=request)
        self.times[kind].append(time.perf_counter() - began)
        self.cpu[kind].append(time.thread_time() - cpu)
        self.mapping[kind].append(self._mapped() - mapped)
        return result

    def figures(self) -> dict[str, dict[str, list[float]]]:
        """Each of :data:`PARTS` by kind of call, as a client prints them."""
        return {part: getattr(self, part) for part in PARTS}

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
