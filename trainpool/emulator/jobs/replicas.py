"""Run the replicas of one CustomJob (or one trial) to an outcome, by Vertex's rules.

- Every replica starts at once (Vertex starts workers in parallel); the job is RUNNING
  once every replica has started (``on_running``).
- A replica that exits non-zero is handled by :mod:`trainpool.emulator.jobs.failure_rules`: a
  permanent exit fails the job; another is restarted in place with the same launch (same
  CLUSTER_SPEC task, host and port), up to the policy's restarts per replica, after which
  the whole job is retried; ``restartJobOnWorkerRestart`` restarts every replica instead.
- When pools 0 and 1 have all exited 0 the job succeeded; evaluators (pool 3) get
  ``EVALUATOR_GRACE_S`` to finish their last evaluation, parameter servers are terminated.
- Cancel terminates every replica (SIGTERM, then SIGKILL) and ends CANCELLED.
- A stop asked by the service (:class:`Stop`: a sweep's automated stopping rule stopping a
  trial's CustomJob early) stops every replica the same way and ends CANCELLED, code 1, with
  the stop's reason as the message instead of "CANCELED".
- ``scheduling.timeout`` passing stops every replica and fails the job; it is measured on
  the emulator's clock (``clock``, :meth:`trainpool.emulator.clock.Clock.monotonic`), so
  advancing the clock past it times the job out (the engine looks again at every advance).
- Preemption (``preempt`` set) stops every replica the same way, as a VM going away, and
  fails the job as :data:`trainpool.emulator.jobs.failure_rules.PREEMPTION_RULE` says: no restart,
  no retry.
- A replica whose output the disk refused to keep, in part (its log or its log entries:
  ``Replica.output_lost``, which the guard's pumps and the container follower report with its
  exit), fails the job RESOURCE_EXHAUSTED, naming the disk and how much of its log was kept,
  whatever its exit status: a job never ends SUCCEEDED with output missing. So does a
  trial's replica that exits 0 while the disk is full with its metric file empty or cut short
  (cloudml-hypertune rewrites the whole file at each report: a refused write loses the
  reports it held, ``metric_file``); a replica that fails on the full disk says it too.
- A replica that fails while the store's disk is full (``full`` says so), or a container
  whose engine's disk was full when it exited (``Replica.disk_full``, seen before the
  container is removed), fails the job RESOURCE_EXHAUSTED, naming the disk, whatever its exit
  status: a replica whose own write found no room is the first to fail, and that failure is
  the disk's, not its code's.

:class:`JobReplicas` holds these rules as a state machine that nothing polls: ``begin()``
starts the replicas, ``step()`` looks once at what happened and says the outcome (an
:class:`~trainpool.emulator.jobs.outcomes.Outcome`) when there is one, ``next_wake()``
says when a deadline falls due (timeout, an evaluator's grace, a test's kill). Its ``wake``
is called when a replica exits or a control is set; the job engine
(:mod:`trainpool.emulator.jobs.job_run`) then runs ``step()`` on its pool.

A restart stops the replicas it replaces first (SIGTERM, the grace period, SIGKILL). Given a
``terminator`` (the engine's terminating pool; by default it is made at once), that wait
is made there, not in ``step()``: a
replica that ignores SIGTERM through a ``restartJobOnWorkerRestart`` restart or a job retry
holds up no other job. The run stays RUNNING meanwhile and decides nothing else; the next
``step()`` after the stop starts the new replicas (Vertex restarts replicas in place, with
the same task: "Restart workers during the training job", understanding-training-service).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from trainpool.emulator.faults.config import KillFault
from trainpool.emulator.jobs.controls import Controls
from trainpool.emulator.jobs.failure_rules import (
    CODE_DEADLINE_EXCEEDED,
    CODE_INVALID_ARGUMENT,
    CODE_RESOURCE_EXHAUSTED,
    CODE_UNAVAILABLE,
    PERMANENT_EXIT_CODES,
    RetryPolicy,
    is_permanent,
    preemption_message,
    status_text,
)
from trainpool.emulator.jobs.outcomes import Outcome, controlled, failure_message
from trainpool.emulator.jobs.processes import Launch, Replica, report_loss
from trainpool.emulator.jobs.runners import HOST_PROCESSES, ReplicaRunner
from trainpool.emulator.records.database import is_disk_full

EVALUATOR_GRACE_S = 10.0
DRIVERS = (0, 1)


class JobReplicas:
    """The replicas of one run and what has happened to them (see the module's rules).

    ``wake()`` is called, from any thread, when a replica exits; the caller then runs
    :meth:`step`, from one thread at a time.
    """

    def __init__(
        self,
        launches: list[Launch],
        controls: Controls,
        *,
        policy: RetryPolicy | None = None,
        timeout_s: float | None = None,
        on_started: Callable[[list[Replica]], None] = lambda _: None,
        note: Callable[[str], None] = lambda _: None,
        kill: KillFault | None = None,
        wake: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
        terminator: Callable[[Callable[[], None]], object] = lambda stop: stop(),
        full: Callable[[], OSError | None] = lambda: None,
        runner: ReplicaRunner = HOST_PROCESSES,
        metric_file: Callable[[str], Path | None] = lambda _: None,
    ) -> None:
        self.launches = launches
        self.runner = runner
        """What starts, kills and terminates the replicas (``jobs.runners``)."""
        self.full = full
        """Why the store's disk is full (an OSError naming it), None when it is not."""
        self.metric_file = metric_file
        """A replica's hyperparameter tuning metric file by its name (a trial's replicas),
        None when its reports are not kept."""
        self.terminator = terminator
        """Runs a restart's termination of the old replicas (default: at once, in the caller)."""
        self.restarting: list[tuple[list[Launch], list[Replica], threading.Event]] = []
        """Restarts whose old replicas are being terminated by the ``terminator``: their launches,
        the old replicas, and an event set once those are gone."""
        self.clock = clock
        self.controls = controls
        self.policy = policy or RetryPolicy()
        self.timeout_s = timeout_s
        self.record = on_started
        self.note = note
        self.kill = kill
        self.wake = wake
        self.replicas: dict[str, Replica] = {}
        self.restarts: dict[str, int] = {}
        self.kills: dict[str, int] = {}
        self.retries = 0
        self.began = 0.0
        self.finished_at: float | None = None

    def begin(self) -> Outcome | None:
        """Start every replica; the run's outcome when it ends before it runs (cancelled or
        stopped before the start: nothing is started; a start that fails)."""
        early = controlled(self.controls)
        if early is not None:
            return early
        self.began = self.clock()
        try:
            self._start(self.launches)
        except OSError as err:
            if is_disk_full(err):
                raise
            return Outcome("FAILED", CODE_INVALID_ARGUMENT, str(err))
        return None

    def _start(self, launches: list[Launch]) -> None:
        started = []
        for launch in launches:
            try:
                if launch.workdir is not None:
                    launch.workdir.fresh()  # a fresh copy of the image's files, every start
                replica = self.replicas[launch.name] = self.runner.start(launch)
            except OSError as err:
                if is_disk_full(err):
                    raise
                raise OSError(f"Cannot start {launch.name}: {err}") from err
            started.append(replica)
        self.record(started)
        for replica in started:
            replica.on_exit(lambda _: self.wake())

    def restart(self, launches: list[Launch]) -> None:
        """Stop ``launches``' replicas on the ``terminator``; the first :meth:`step` after the
        stop starts them again."""
        old = [self.replicas.pop(la.name) for la in launches]
        gone = threading.Event()

        def terminate_old() -> None:
            try:
                self.runner.terminate(old)
            finally:
                gone.set()
                self.wake()

        self.restarting.append((launches, old, gone))
        try:
            self.terminator(terminate_old)
        except RuntimeError:  # the terminator is shut down (the emulator closes): here
            terminate_old()

    def _restart_terminated(self) -> None:
        """Start the replicas of every restart whose old ones are gone."""
        for entry in [e for e in self.restarting if e[2].is_set()]:
            self.restarting.remove(entry)
            self._start(entry[0])

    def running(self) -> bool:
        """Whether a replica, or a process a replica started, still runs (:meth:`close` would
        wait for it), a restart's old ones included."""
        return any(not gone.is_set() for _, _, gone in self.restarting) or any(
            self.runner.alive(r) for r in self.replicas.values()
        )

    def close(self) -> None:
        """Stop whatever still runs (SIGTERM, then SIGKILL after a grace period: this waits),
        a restart's old replicas still stopping included (stopped twice, they go once);
        nothing more is started."""
        old = [r for _, replicas, gone in self.restarting if not gone.is_set() for r in replicas]
        self.restarting.clear()
        self.runner.terminate(list(self.replicas.values()) + old)

    def step(self) -> Outcome | None:
        """Look once at the controls, the deadlines and the replicas; the outcome when the run
        has ended (restarts are made here, as the rules say)."""
        early = controlled(self.controls)
        if early is not None:
            return early
        if self.controls.preempt.is_set():
            return Outcome(
                "FAILED", CODE_RESOURCE_EXHAUSTED, preemption_message(sorted(self.replicas))
            )
        now = time.monotonic()
        if self.timeout_s is not None and self.clock() - self.began > self.timeout_s:
            return Outcome(
                "FAILED",
                CODE_DEADLINE_EXCEEDED,
                f"The job exceeded its timeout of {self.timeout_s:g}s.",
            )
        if self.kill is not None:
            self._apply_kill(self.kill, now)
        if self.restarting:
            try:
                self._restart_terminated()
            except OSError as err:
                if is_disk_full(err):
                    raise
                return Outcome("FAILED", CODE_INVALID_ARGUMENT, str(err))
            if self.restarting:
                return None  # the old replicas are still stopping: nothing else is decided
        for replica in list(self.replicas.values()):
            status = replica.exit_status()
            if status is not None and replica.output_lost:
                return self.output_lost(replica, status)
            if status == 0 and self.full() is not None and self.reports_lost(replica):
                return self.output_lost(replica, status)
            if status not in (None, 0):
                try:
                    outcome = self.on_failure(replica, status)
                except OSError as err:
                    if is_disk_full(err):
                        raise
                    return Outcome("FAILED", CODE_INVALID_ARGUMENT, str(err))
                if outcome is not None:
                    return outcome
                self.finished_at = None
                return None
        replicas = list(self.replicas.values())
        drivers = [r for r in replicas if r.launch.pool in DRIVERS]
        if self.finished_at is None and all(r.exit_status() == 0 for r in drivers):
            self.finished_at = now
        if self.finished_at is not None:
            evaluating = any(r.exit_status() is None for r in replicas if r.launch.pool == 3)
            if not evaluating or now - self.finished_at > EVALUATOR_GRACE_S:
                return Outcome("SUCCEEDED")
        return None

    def next_wake(self) -> float | None:
        """When a deadline falls due (monotonic seconds), None when none is pending."""
        due = []
        if self.timeout_s is not None:  # the emulator's clock may run ahead of real time
            ahead = self.clock() - time.monotonic()
            due.append(self.began + self.timeout_s - ahead + 0.001)
        if self.finished_at is not None:
            due.append(self.finished_at + EVALUATOR_GRACE_S + 0.001)
        kill = self.kill
        if kill is not None and self.kills.get(kill.replica, 0) < kill.times:
            replica = self.replicas.get(kill.replica)
            if replica is not None and replica.exit_status() is None:
                due.append(replica.started + kill.after_s)
        return min(due) if due else None

    def _apply_kill(self, kill: KillFault, now: float) -> None:
        replica = self.replicas.get(kill.replica)
        if replica is None or replica.exit_status() is not None:
            return
        if self.kills.get(kill.replica, 0) < kill.times and now - replica.started >= kill.after_s:
            self.kills[kill.replica] = self.kills.get(kill.replica, 0) + 1
            self.runner.kill(replica)

    def reports_lost(self, replica: Replica) -> str:
        """What a replica lost of its metric reports, in words: its metric file empty or cut
        short (``processes.report_loss``); "" when whole, or when its reports are not kept."""
        path = self.metric_file(replica.launch.name)
        return "" if path is None else report_loss(replica.launch.name, path)

    def output_lost(self, replica: Replica, status: int) -> Outcome:
        """A replica whose output or metric reports the disk refused to keep, in part: the job
        fails, naming the disk and what was kept, whatever its exit status (never SUCCEEDED
        with output missing; never restarted onto a disk that has no room)."""
        full = self.full()
        disk = f"{full.strerror}.\n" if full is not None else ""
        shut = (
            "The job was shut down rather than end with the replica's output missing; free "
            "some space on the store's disk and create the job again."
        )
        ended = (
            f"The replica {replica.launch.name} exited with status 0.\n{shut}"
            if status == 0
            else failure_message(replica, status, shut)
        )
        lost = "".join(
            f"{what}.\n" for what in (replica.output_lost, self.reports_lost(replica)) if what
        )
        return Outcome("FAILED", CODE_RESOURCE_EXHAUSTED, f"{disk}{lost}{ended}")

    def on_failure(self, replica: Replica, status: int) -> Outcome | None:
        """Restart what Vertex would restart; the job's failure when it would not."""
        final = self._unrestartable(replica, status)
        if final is not None:
            return final
        name = replica.launch.name
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

    def _unrestartable(self, replica: Replica, status: int) -> Outcome | None:
        """The job's failure when no restart could mend ``replica``'s: a full disk, its
        container engine gone, a permanent exit code; None otherwise."""
        full = self.full()
        disk = "the store's disk"
        if full is None and replica.disk_full is not None:
            full, disk = replica.disk_full, "its container engine's disk"
        if full is not None:
            reports = self.reports_lost(replica)
            return Outcome(
                "FAILED",
                CODE_RESOURCE_EXHAUSTED,
                f"{full.strerror or full}.\n"
                + (f"{reports}.\n" if reports else "")
                + failure_message(
                    replica,
                    status,
                    f"It failed with {disk} full: the job was shut down without "
                    "restarting it (its writes cannot succeed until there is room).",
                ),
            )
        if replica.engine_lost:
            return Outcome(
                "FAILED",
                CODE_UNAVAILABLE,
                failure_message(
                    replica,
                    status,
                    f"Its container engine went away: {replica.engine_lost}. The job was shut "
                    "down without restarting the replica (no container starts without the "
                    "engine; start it again, or set DOCKER_HOST to one that answers).",
                ),
            )
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
        return None
