"""``trainpool.emulator.v1.Faults``: the emulator's own service, beside Vertex's API.

``PreemptJob(PreemptJobRequest{name}) -> CustomJob`` preempts a RUNNING CustomJob, as
Compute Engine reclaims Spot VMs, and answers with the ended job. Vertex has no such
method; it is how tests and ``trainpool jobs preempt`` reach a running emulator from
another process. Which jobs can be preempted and how they end is written once, in
:mod:`trainpool.emulator.jobs.failure_rules` (``PREEMPTIBLE_STRATEGIES``,
``PREEMPTION_RULE``): every replica gets SIGTERM, then SIGKILL after
:data:`trainpool.emulator.jobs.processes.TERMINATE_GRACE_S` (a VM going away), and the job ends
FAILED with the STOCKOUT error, with no replica restarted and no retry. The request is in
:mod:`trainpool.emulator_client.messages`; :func:`trainpool.emulator_client.preempt_job` is
its client.
"""

from __future__ import annotations

import time

from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types.job_state import JobState

from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import Service, not_found, precondition, service
from trainpool.emulator.jobs.failure_rules import PREEMPTIBLE_STRATEGIES
from trainpool.emulator.jobs.manager import TERMINAL, JobManager
from trainpool.emulator.records.kinds import CUSTOM_JOBS
from trainpool.emulator.state import EmulatorState
from trainpool.emulator_client.messages import FAULTS as SERVICE
from trainpool.emulator_client.messages import PreemptJobRequest
from trainpool.spec.normalize import job_spec_rest

END_WAIT_S = 30.0
"""How long :func:`preempt` waits for the preempted job to end (its replicas stop in seconds)."""
POLL_S = 0.05


def preempt(manager: JobManager, name: str) -> cj.CustomJob:
    """Preempt RUNNING CustomJob ``name`` and return it once it has ended.

    Raises :class:`trainpool.errors.InputError` for a name that is not a CustomJob's, and
    :class:`trainpool.emulator.api.rpc.RpcError`: NOT_FOUND, FAILED_PRECONDITION for a job
    that is not RUNNING or whose ``scheduling.strategy`` is not preemptible (nothing is
    changed then).
    """
    requests.check_name(name, CUSTOM_JOBS.collection)
    job = manager.get(name)
    if job is None:
        raise not_found(f"CustomJob {name} not found.")
    strategy = job_spec_rest(job.job_spec).get("scheduling", {}).get("strategy", "STANDARD")
    if strategy not in PREEMPTIBLE_STRATEGIES:
        raise precondition(
            f"Cannot preempt CustomJob {name}: job_spec.scheduling.strategy is {strategy}; "
            f"accepted: {', '.join(PREEMPTIBLE_STRATEGIES)} (Compute Engine does not reclaim "
            "the VMs of a STANDARD job)"
        )
    if job.state != JobState.JOB_STATE_RUNNING or not manager.preempt(name):
        raise precondition(
            f"Cannot preempt CustomJob {name}: it is in state {job.state.name}; "
            "accepted: a job in state JOB_STATE_RUNNING"
        )
    deadline = time.monotonic() + END_WAIT_S
    while job.state not in TERMINAL and time.monotonic() < deadline:
        time.sleep(POLL_S)
        job = manager.require(name)
    return job


def handler(state: EmulatorState, manager: JobManager) -> Service:
    return service(
        SERVICE,
        {"PreemptJob": (lambda r: preempt(manager, r.name), PreemptJobRequest, cj.CustomJob)},
    )
