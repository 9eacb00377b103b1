"""This machine's quota of replicas running at once, as Vertex's training quotas bound a project.

On Vertex, what a project may run at once in a region is bounded by its quotas ("Custom
model training CPUs ... per region", GPUs per type, https://cloud.google.com/vertex-ai/docs/quotas).
A job whose resources the quota cannot hold now waits: "if multiple jobs for the same
project were started at the same time and the quota isn't sufficient for all of them, then
one of the jobs remain in queued state and won't start training" (Vertex AI's Neural
Architecture Search documentation, on its quotas), and
``JOB_STATE_QUEUED`` is "The job has been just created or resumed and processing has not
yet begun" (``aiplatform_v1/types/job_state.py``). A request beyond the quota's limit itself
is refused with ``429 RESOURCE_EXHAUSTED`` ("The following quota metrics exceed quota
limits: aiplatform.googleapis.com/custom_model_training_cpus", same notes).

Locally the resource is a replica process: at most :attr:`Quota.limit` replicas run at once
(``trainpool emulator --max-replicas N``, else ``$TRAINPOOL_EMULATOR_MAX_REPLICAS``, else
:func:`default_limit`). A job (or a sweep's trial) holds ``replica_slots(spec)`` slots from
the start of its replicas to its end; one that does not fit now stays QUEUED, and jobs start
in creation order as slots free (an earlier job that needs more slots is not overtaken).
A job needing more slots than the whole quota is refused at Create.

A job on a PersistentResource (``jobSpec.persistentResourceId``) also holds replicas of that
resource's pools (its ticket's ``pools``: key -> (replicas, the pool's capacity), given by
:attr:`Quota.claim`, which :mod:`trainpool.emulator.persistent` sets): it stays QUEUED until
they are free as well, and jobs waiting for the same pool start in creation order; a job
waiting only for a resource's pool does not hold back the jobs behind it.
"""

from __future__ import annotations

import heapq
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trainpool.cluster_env import layout
from trainpool.emulator.api.rpc import QuotaExceeded

LIMIT_ENV = "TRAINPOOL_EMULATOR_MAX_REPLICAS"
FLOOR = 8
"""The smallest default: enough for a few multi-replica jobs on a small machine."""


def default_limit(environ: dict[str, str] | None = None) -> int:
    """``$TRAINPOOL_EMULATOR_MAX_REPLICAS``, else twice the CPUs, at least :data:`FLOOR`."""
    env = os.environ if environ is None else environ
    text = env.get(LIMIT_ENV, "").strip()
    if text:
        return parse_limit(text, LIMIT_ENV)
    return max(FLOOR, 2 * (os.cpu_count() or 1))


def parse_limit(value: Any, field_name: str = "--max-replicas") -> int:
    """A quota given by a user: a whole number >= 1 (ValueError naming ``field_name``)."""
    try:
        limit = int(str(value).strip())
    except ValueError:
        limit = 0
    if limit < 1:
        raise ValueError(f"{field_name}: {value!r}; accepted: a whole number of replicas >= 1")
    return limit


def replica_slots(spec: dict[str, Any]) -> int:
    """The replica processes a CustomJobSpec (REST JSON) starts: every replica of every pool,
    but a Reduction Server's (listed in CLUSTER_SPEC, not started locally)."""
    pools = layout.pool_specs(spec)
    return sum(
        1
        for pool, _ in layout.replicas(spec)
        if not (pool == 2 and layout.is_reduction_server(pools[pool]))
    )


@dataclass(order=True)
class Ticket:
    """A job's place in the queue: ``order`` is its creation order (its numeric id)."""

    order: int
    slots: int = field(compare=False)
    admit: Callable[[], None] = field(compare=False, repr=False)
    since: float = field(default_factory=time.monotonic, compare=False)
    state: str = field(default="waiting", compare=False)
    """"waiting", "admitted", "withdrawn" or "released"."""
    pools: dict[str, tuple[int, int]] = field(default_factory=dict, compare=False)
    """Replicas of a persistent resource's pools it holds: key -> (replicas, capacity)."""


class Quota:
    """Slots for replicas; jobs beyond them wait in creation order."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.waiting = 0
        """Jobs waiting now."""
        self._waiting: list[Ticket] = []
        self._lock = threading.Lock()
        self.in_use: dict[str, int] = {}
        """Replicas of each persistent resource pool held by admitted jobs."""
        self.claim: Callable[[str, dict[str, Any]], dict[str, tuple[int, int]]] = (
            lambda _name, _spec: {}
        )
        """The pools job ``name`` with ``spec`` takes replicas of (set by
        :mod:`trainpool.emulator.persistent.resources`)."""

    def check(self, slots: int) -> None:
        """Raise :class:`QuotaExceeded` when ``slots`` can never fit."""
        if slots > self.limit:
            raise QuotaExceeded(
                f"The job needs {slots} replicas at once; this emulator's quota is "
                f"{self.limit} (trainpool emulator --max-replicas N, or {LIMIT_ENV}). "
                "Raise the quota or ask for fewer replicas."
            )

    def request(self, ticket: Ticket) -> bool:
        """Queue ``ticket``'s job; its ``admit()`` is called (perhaps at once, on this thread)
        when the slots are its. False when it has to wait."""
        with self._lock:
            heapq.heappush(self._waiting, ticket)
            self.waiting += 1
            admitted = self._admit()
        for each in admitted:
            each.admit()
        return ticket in admitted

    def withdraw(self, ticket: Ticket) -> bool:
        """Take a waiting job out of the queue; False when it was admitted already."""
        with self._lock:
            if ticket.state != "waiting":
                return False
            ticket.state = "withdrawn"
            self.waiting -= 1
            admitted = self._admit()  # a withdrawn head may have held back smaller jobs
        for each in admitted:
            each.admit()
        return True

    def release(self, ticket: Ticket) -> None:
        """Give an admitted job's slots back; the next jobs that fit are admitted."""
        with self._lock:
            if ticket.state != "admitted":
                return
            ticket.state = "released"
            self.used -= ticket.slots
            for key, (replicas, _) in ticket.pools.items():
                self.in_use[key] = self.in_use.get(key, 0) - replicas
            admitted = self._admit()
        for each in admitted:
            each.admit()

    def _admit(self) -> list[Ticket]:
        admitted = []
        blocked: set[str] = set()
        for head in sorted(self._waiting):
            if head.state != "waiting":
                continue
            if self.used + head.slots > self.limit:
                break
            if blocked & head.pools.keys() or not self._pools_free(head):
                blocked |= head.pools.keys()
                continue
            head.state = "admitted"
            self.waiting -= 1
            self.used += head.slots
            for key, (replicas, _) in head.pools.items():
                self.in_use[key] = self.in_use.get(key, 0) + replicas
            admitted.append(head)
        if admitted or any(t.state != "waiting" for t in self._waiting):
            self._waiting = [t for t in self._waiting if t.state == "waiting"]
            heapq.heapify(self._waiting)
        return admitted

    def _pools_free(self, ticket: Ticket) -> bool:
        return all(
            self.in_use.get(key, 0) + replicas <= capacity
            for key, (replicas, capacity) in ticket.pools.items()
        )
