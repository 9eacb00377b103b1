"""Run the replicas of one CustomJob (or one trial) to an outcome, by Vertex's rules.

- Every replica starts at once (Vertex starts workers in parallel); the job is RUNNING
  once every replica has started (``on_running``).
- A replica that exits non-zero is handled by :mod:`trainpool.emulator.jobs.failure_rules`: a
  permanent exit fails the job; another is restarted in place with the same launch (same
  CLUSTER_SPEC task, host and port), up to the policy's restarts per replica, after which
  the whole job is retried; ``restartJobOnWorkerRestart`` restarts every replica instead.
- When pools 0 and 1 have all exited 0 the job succeeded; evaluators (pool 3) get
  ``EVALUATOR_GRACE_S`` to finish their last evaluation, parameter servers are stopped.
- Cancel stops every replica (SIGTERM, then SIGKILL) and ends CANCELLED.
- A stop asked by the service (:class:`Stop`: a sweep's automated stopping rule stopping a
  trial's CustomJob early) stops every replica the same way and ends CANCELLED, code 1, with
  the stop's reason as the message instead of "CANCELED".
- ``scheduling.timeout`` passing stops every replica and fails the job; it is measured on
  the emulator's clock (``clock``, :meth:`trainpool.emulator.clock.Clock.monotonic`), so
  advancing the clock past it times the job out.
- Preemption (``preempt`` set) stops every replica the same way, as a VM going away, and
  fails the job as :data:`trainpool.emulator.jobs.failure_rules.PREEMPTION_RULE` says: no restart,
  no retry.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trainpool.emulator.faults.config import KillFault
from trainpool.emulator.jobs import processes
from trainpool.emulator.jobs.environments import BuildFailed
from trainpool.emulator.jobs.failure_rules import (
    CODE_CANCELLED,
    CODE_DEADLINE_EXCEEDED,
    CODE_INVALID_ARGUMENT,
    CODE_RESOURCE_EXHAUSTED,
    PERMANENT_EXIT_CODES,
    RetryPolicy,
    exit_message,
    is_permanent,
    preemption_message,
    status_text,
)
from trainpool.emulator.jobs.launches import JobContext, LaunchError, plan_launches
from trainpool.emulator.jobs.logs import JobLog
from trainpool.emulator.jobs.packages import PackageError
from trainpool.emulator.jobs.processes import Launch, Replica
from trainpool.spec.timing import duration_seconds

POLL_S = 0.05
EVALUATOR_GRACE_S = 10.0
DRIVERS = (0, 1)


@dataclass(frozen=True)
class Outcome:
    """How the replicas ended: ``state`` is "SUCCEEDED", "FAILED" or "CANCELLED"."""

    state: str
    code: int = 0
    message: str = ""


def failure_message(replica: Replica, status: int, detail: str = "") -> str:
    """Vertex's first line, then the emulator's ``detail`` and the tail of the replica's log."""
    message = exit_message(replica.launch.name, status)
    if detail:
        message += f"\n{detail}"
    log_tail = processes.tail(replica.launch.log)
    if log_tail:
        message += f"\nLast lines of {replica.launch.log}:\n{log_tail}"
    return message


@dataclass
class _Run:
    """The replicas of one run and what has happened to them."""

    launches: list[Launch]
    policy: RetryPolicy
    record: Callable[[list[Replica]], None]
    note: Callable[[str], None]
    replicas: dict[str, Replica] = field(default_factory=dict)
    restarts: dict[str, int] = field(default_factory=dict)
    kills: dict[str, int] = field(default_factory=dict)
    retries: int = 0

    def start(self, launches: list[Launch]) -> None:
        started = []
        for launch in launches:
            try:
                if launch.workdir is not None:
                    launch.workdir.fresh()
                self.replicas[launch.name] = processes.start(launch)
            except OSError as err:
                raise OSError(f"Cannot start {launch.name}: {err}") from err
            started.append(self.replicas[launch.name])
        self.record(started)

    def restart(self, launches: list[Launch]) -> None:
        processes.stop([self.replicas.pop(la.name) for la in launches])
        self.start(launches)

    def on_failure(self, replica: Replica, status: int) -> Outcome | None:
        """Restart what Vertex would restart; the job's failure when it would not."""
        name = replica.launch.name
        if is_permanent(status):
            reason = PERMANENT_EXIT_CODES[status]
            return Outcome(
                "FAILED",
                CODE_INVALID_ARGUMENT,
                failure_message(
                    replica,
                    status,
                    f"Exit code {status} ({reason}) is permanent: the job was "
                    "shut down without restarting the replica.",
                ),
            )
        if self.restarts.get(name, 0) < self.policy.worker_restarts:
            self.restarts[name] = self.restarts.get(name, 0) + 1
            every = self.policy.restart_job_on_worker_restart
            self.note(
                f"{name} exited with {status_text(status)}; restarting "
                f"{'every replica (restartJobOnWorkerRestart)' if every else 'it in place'} "
                f"with the same task, host and port (restart {self.restarts[name]} of "
                f"{self.policy.worker_restarts})"
            )
            self.restart(self.launches if every else [replica.launch])
            return None
        if self.retries < self.policy.job_retries:
            self.retries += 1
            self.restarts.clear()
            self.note(
                f"{name} exited with {status_text(status)} after {self.policy.worker_restarts} "
                f"restart(s); retrying the whole job (retry {self.retries} of "
                f"{self.policy.job_retries})"
            )
            self.restart(self.launches)
            return None
        return Outcome(
            "FAILED",
            CODE_INVALID_ARGUMENT,
            failure_message(
                replica,
                status,
                f"The replica was restarted {self.policy.worker_restarts} time(s) and the job "
                f"retried {self.policy.job_retries} time(s).",
            ),
        )


def run_replicas(
    launches: list[Launch],
    *,
    cancel: threading.Event,
    policy: RetryPolicy | None = None,
    timeout_s: float | None = None,
    on_started: Callable[[list[Replica]], None] = lambda _: None,
    on_running: Callable[[], None] = lambda: None,
    note: Callable[[str], None] = lambda _: None,
    kill: KillFault | None = None,
    preempt: threading.Event | None = None,
    stop: Stop | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Outcome:
    """Start every launch, watch, restart and stop them, and say how the job ended.

    ``on_started`` gets every set of processes started (first start and restarts);
    ``on_running`` is called once, when every replica has started; ``preempt`` set ends
    the run preempted; ``stop`` set ends it CANCELLED with its reason;
    ``timeout_s`` is measured with ``clock``. Whatever ends the run
    (an outcome, a start that fails, a callback raising), no replica is left running; a
    run cancelled before it starts starts nothing.
    """
    if cancel.is_set():
        return Outcome("CANCELLED", CODE_CANCELLED, "CANCELED")
    if stop is not None and stop.is_set():
        return Outcome("CANCELLED", CODE_CANCELLED, stop.reason)
    run = _Run(launches, policy or RetryPolicy(), on_started, note)
    try:
        try:
            run.start(launches)
        except OSError as err:
            return Outcome("FAILED", CODE_INVALID_ARGUMENT, str(err))
        on_running()
        return _watch(
            run, cancel, timeout_s, kill, preempt or threading.Event(), stop or Stop(), clock
        )
    finally:
        processes.stop(list(run.replicas.values()))


def _watch(
    run: _Run,
    cancel: threading.Event,
    timeout_s: float | None,
    kill: KillFault | None,
    preempt: threading.Event,
    stop: Stop,
    clock: Callable[[], float],
) -> Outcome:
    began = clock()
    finished_at: float | None = None
    while True:
        if cancel.is_set():
            return Outcome("CANCELLED", CODE_CANCELLED, "CANCELED")
        if stop.is_set():
            return Outcome("CANCELLED", CODE_CANCELLED, stop.reason)
        if preempt.is_set():
            return Outcome(
                "FAILED", CODE_RESOURCE_EXHAUSTED, preemption_message(sorted(run.replicas))
            )
        if timeout_s is not None and clock() - began > timeout_s:
            return Outcome(
                "FAILED", CODE_DEADLINE_EXCEEDED, f"The job exceeded its timeout of {timeout_s:g}s."
            )
        if kill is not None:
            _apply_kill(run, kill)
        for replica in list(run.replicas.values()):
            status = replica.exit_status()
            if status not in (None, 0):
                try:
                    outcome = run.on_failure(replica, status)
                except OSError as err:
                    return Outcome("FAILED", CODE_INVALID_ARGUMENT, str(err))
                if outcome is not None:
                    return outcome
                finished_at = None
                break
        replicas = list(run.replicas.values())
        drivers = [r for r in replicas if r.launch.pool in DRIVERS]
        if finished_at is None and all(r.exit_status() == 0 for r in drivers):
            finished_at = time.monotonic()
        if finished_at is not None:
            evaluating = any(r.exit_status() is None for r in replicas if r.launch.pool == 3)
            if not evaluating or time.monotonic() - finished_at > EVALUATOR_GRACE_S:
                return Outcome("SUCCEEDED")
        cancel.wait(POLL_S)


def _apply_kill(run: _Run, kill: KillFault) -> None:
    replica = run.replicas.get(kill.replica)
    if replica is None or replica.exit_status() is not None:
        return
    if run.kills.get(kill.replica, 0) < kill.times:
        if time.monotonic() - replica.started >= kill.after_s:
            run.kills[kill.replica] = run.kills.get(kill.replica, 0) + 1
            processes.signal_group(replica.pgid, signal.SIGKILL)


class Stop:
    """The service stopping a job early, with its reason (a sweep's stopping rule); set once."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""

    def set(self, reason: str) -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


@dataclass(frozen=True)
class Controls:
    """How a running job is stopped from outside: ``cancel``, ``preempt`` (its VMs
    reclaimed, :mod:`trainpool.emulator.faults.preemption`), or ``stop`` (the service stops
    it early, :class:`Stop`)."""

    cancel: threading.Event = field(default_factory=threading.Event)
    preempt: threading.Event = field(default_factory=threading.Event)
    stop: Stop = field(default_factory=Stop)


def run_spec(
    spec: dict[str, Any],
    ctx: JobContext,
    controls: Controls,
    *,
    on_started: Callable[[list[Replica]], None],
    on_running: Callable[[], None] = lambda: None,
    kill: KillFault | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Outcome:
    """Plan and run the replicas of one CustomJobSpec; any setup problem is a FAILED outcome.

    ``on_started`` gets every set of replica processes started (restarts too);
    ``on_running`` is called once every replica has started; ``controls`` cancel or
    preempt it; ``kill`` is a test fault; ``clock`` measures ``scheduling.timeout`` (the
    emulator's clock).
    """
    note = JobLog(ctx.files.log)
    try:
        launches = plan_launches(spec, ctx, note)
    except (LaunchError, PackageError, BuildFailed) as err:
        note(str(err))
        return Outcome("FAILED", CODE_INVALID_ARGUMENT, str(err))
    note(f"starting {len(launches)} replica(s): {', '.join(la.name for la in launches)}")
    scheduling = spec.get("scheduling", {})
    timeout = scheduling.get("timeout", "")
    outcome = run_replicas(
        launches,
        cancel=controls.cancel,
        policy=RetryPolicy.from_scheduling(scheduling),
        timeout_s=duration_seconds(timeout) if timeout else None,
        on_started=on_started,
        on_running=on_running,
        note=note,
        kill=kill,
        preempt=controls.preempt,
        stop=controls.stop,
        clock=clock,
    )
    note(f"ended {outcome.state}" + (f": {outcome.message}" if outcome.message else ""))
    return outcome
