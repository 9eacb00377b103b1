"""Preempting a running CustomJob on demand, as Compute Engine reclaims Spot VMs.

Which jobs can be preempted and how they end is written once, in
:mod:`trainpool.emulator.failures` (``PREEMPTIBLE_STRATEGIES``, ``PREEMPTION_RULE``).
Every replica gets SIGTERM, then SIGKILL after :data:`trainpool.emulator.processes.STOP_GRACE_S`
(a VM going away; Compute Engine's preemption notice is a soft shutdown), and the job ends
FAILED with the STOCKOUT error, with no replica restarted and no retry.
"""

from __future__ import annotations

import time

from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types.job_state import JobState

from trainpool.emulator import validation
from trainpool.emulator.convert import job_spec_rest
from trainpool.emulator.failures import PREEMPTIBLE_STRATEGIES
from trainpool.emulator.job_store import CUSTOM, TERMINAL
from trainpool.emulator.rpc import not_found, precondition
from trainpool.emulator.runner import Runner

END_WAIT_S = 30.0
"""How long :func:`preempt` waits for the preempted job to end (its replicas stop in seconds)."""
POLL_S = 0.05


def preempt(runner: Runner, name: str) -> cj.CustomJob:
    """Preempt RUNNING CustomJob ``name`` and return it once it has ended.

    Raises :class:`trainpool.emulator.rpc.RpcError`: INVALID_ARGUMENT for a name that is not
    a CustomJob's, NOT_FOUND, FAILED_PRECONDITION for a job that is not RUNNING or whose
    ``scheduling.strategy`` is not preemptible (nothing is changed then).
    """
    validation.check_name(name, CUSTOM)
    job = runner.store.get(name)
    if job is None:
        raise not_found(f"CustomJob {name} not found.")
    strategy = job_spec_rest(job.job_spec).get("scheduling", {}).get("strategy", "STANDARD")
    if strategy not in PREEMPTIBLE_STRATEGIES:
        raise precondition(
            f"Cannot preempt CustomJob {name}: job_spec.scheduling.strategy is {strategy}; "
            f"accepted: {', '.join(PREEMPTIBLE_STRATEGIES)} (Compute Engine does not reclaim "
            "the VMs of a STANDARD job)"
        )
    if job.state != JobState.JOB_STATE_RUNNING or not runner.preempt(name):
        raise precondition(
            f"Cannot preempt CustomJob {name}: it is in state {job.state.name}; "
            "accepted: a job in state JOB_STATE_RUNNING"
        )
    deadline = time.monotonic() + END_WAIT_S
    while job.state not in TERMINAL and time.monotonic() < deadline:
        time.sleep(POLL_S)
        job = runner.store.require(name)
    return job
