"""The life of one CustomJob (or one sweep's trial) on the job engine, with no thread of its own.

QUEUED until this machine's replica quota admits it (:mod:`trainpool.emulator.jobs.quota`;
its ``job.log`` says it waited), PENDING while its replicas are planned (on the engine's
setup pool: packages are installed there) and started, RUNNING once every replica has
started, then its outcome (:class:`trainpool.emulator.jobs.replicas.JobReplicas`'s rules).
Every step runs on the engine's pool through the job's :class:`Serial`, when something
happened: the quota admitted it, a replica exited (the spawner's reader wakes it), a control
was set (Cancel, a stop, a preemption), or a deadline fell due (the engine's timers).

Whatever ends it (its outcome, an error of the emulator's, a full disk), the end is the same:
replicas terminated, ``ended ...`` in ``job.log``, the record finished, the slots given back,
``on_end(outcome)`` called. A disk too full for the emulator to write its notes or records
fails the job with code 8 (RESOURCE_EXHAUSTED) and a message naming the disk; so does a
replica that fails while the disk is full (:func:`store_full`), its own write having found
no room first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from google.cloud.aiplatform_v1.types.job_state import JobState

from trainpool.emulator.faults.config import KillFault
from trainpool.emulator.jobs.containers import EngineDiskFull, EngineGone
from trainpool.emulator.jobs.controls import Controls
from trainpool.emulator.jobs.engine import Engine, Timer
from trainpool.emulator.jobs.failure_rules import (
    CODE_INTERNAL,
    CODE_INVALID_ARGUMENT,
    CODE_RESOURCE_EXHAUSTED,
    CODE_UNAVAILABLE,
    RetryPolicy,
)
from trainpool.emulator.jobs.job_context import JobContext
from trainpool.emulator.jobs.launches import plan_launches
from trainpool.emulator.jobs.logs import JobLog
from trainpool.emulator.jobs.outcomes import Outcome, controlled
from trainpool.emulator.jobs.packages import PackageError
from trainpool.emulator.jobs.processes import Launch, Replica
from trainpool.emulator.jobs.programs import LaunchError
from trainpool.emulator.jobs.quota import Quota, Ticket, replica_slots
from trainpool.emulator.jobs.replicas import JobReplicas
from trainpool.emulator.jobs.runners import ReplicaRunner
from trainpool.emulator.records.database import DiskFull, is_disk_full, low_space
from trainpool.emulator.stand_ins.virtualenvs import BuildFailed
from trainpool.emulator.tensorboards import uploads
from trainpool.spec.timing import duration_seconds


class Host(Protocol):
    """What a job's life needs of the engine's front (``jobs.manager.JobManager``)."""

    engine: Engine
    quota: Quota
    kill: KillFault | None
    runner: ReplicaRunner
    """How the replicas run (:mod:`trainpool.emulator.jobs.runners`)."""
    monotonic: Callable[[], float]
    """The emulator's clock in monotonic seconds (``scheduling.timeout`` is measured on it)."""

    def set_state(
        self,
        name: str,
        state: int,
        started: list[Replica] | None = None,
        web_access: dict[str, str] | None = None,
    ) -> None: ...
    def finish(self, name: str, outcome: Outcome) -> None: ...
    def record_groups(self, name: str, replicas: list[Replica]) -> None: ...
    def unregister(self, name: str) -> None: ...


def error_outcome(err: BaseException, root: Any) -> Outcome:
    """How an error of the emulator's own ends a job: a full disk named, else internal."""
    if isinstance(err, EngineDiskFull):
        return Outcome(
            "FAILED",
            CODE_RESOURCE_EXHAUSTED,
            f"{err.strerror}. The job's replicas were terminated; free some space and create "
            "the job again.",
        )
    if is_disk_full(err):
        return Outcome(
            "FAILED",
            CODE_RESOURCE_EXHAUSTED,
            f"The emulator cannot write to the disk of its store {root}: {err}. The job's "
            "replicas were terminated; free some space and create the job again.",
        )
    return Outcome("FAILED", CODE_INTERNAL, f"Internal emulator error: {err!r}")


def no_metric_file(_: str) -> None:
    """No replica's metric file is kept: a CustomJob's own (not a trial's) reports are read
    by nobody, as on Vertex."""


def store_full(root: Path) -> DiskFull | None:
    """The store's disk full (less than ``MIN_FREE_BYTES`` free), named; None when not."""
    free = low_space(root)
    return None if free is None else DiskFull(root, f"{free} bytes free when a replica failed")


class JobLifecycle:
    """One job's life; see the module. ``start()`` once, from any thread."""

    def __init__(
        self,
        manager: Host,
        name: str,
        spec: dict[str, Any],
        ctx: JobContext,
        controls: Controls,
        on_end: Callable[[Outcome], None] = lambda _: None,
    ) -> None:
        self.manager = manager
        self.name = name
        self.spec = spec
        self.ctx = ctx
        self.controls = controls
        self.on_end = on_end
        self.serial = manager.engine.serial(self._failed)
        self.note = JobLog(ctx.files.log)
        self.phase = "queued"
        self.ticket: Ticket | None = None
        self.run: JobReplicas | None = None
        self.timer: Timer | None = None
        self.waited = False
        self.first: list[Replica] | None = []
        self.upload: uploads.Upload | None = None

    def start(self) -> None:
        """Ask the quota for the job's replicas; it runs when they are its."""
        slots = replica_slots(self.spec)
        order = int(self.name.rsplit("/", 1)[-1])
        self.controls.listen(lambda: self.serial.send(self._controlled))
        pools = self.manager.quota.claim(self.name, self.spec)
        self.ticket = Ticket(order, slots, lambda: self.serial.send(self._admitted), pools=pools)
        if not self.manager.quota.request(self.ticket):
            self.waited = True
            quota = self.manager.quota
            self.note(
                f"waiting in state QUEUED for {slots} replica slot(s): {quota.used} of this "
                f"machine's {quota.limit} are in use and {max(0, quota.waiting - 1)} other "
                "job(s) wait, those created earlier first (the emulator's replica quota: "
                "--max-replicas)"
            )
            for key, (replicas, capacity) in pools.items():
                used = quota.in_use.get(key, 0)
                self.note(
                    f"and for {replicas} replica(s) of persistent resource pool {key}: {used} "
                    f"of its {capacity} are held by other jobs"
                )

    def nudge(self) -> None:
        """Look again (the emulator's clock moved: a timeout may have passed)."""
        self.serial.send(self._step)

    def _controlled(self) -> None:
        if self.phase == "queued":
            outcome = controlled(self.controls)
            if outcome is not None and self.ticket is not None:
                if self.manager.quota.withdraw(self.ticket):
                    self._end(outcome)
        elif self.phase == "running":
            self._step()

    def _admitted(self) -> None:
        if self.phase != "queued":
            return
        assert self.ticket is not None
        if self.waited:
            waited = time.monotonic() - self.ticket.since
            self.note(f"waited {waited:.1f} s in state QUEUED for replica slots; starting")
        self.phase = "setup"
        self.manager.set_state(self.name, JobState.JOB_STATE_PENDING)
        self.manager.engine.setup.submit(self._plan)

    def _plan(self) -> None:
        """On the setup pool: the job's launches, or how it failed."""
        planned: list[Launch] | Outcome
        try:
            planned = plan_launches(self.spec, self.ctx, self.note)
        except (LaunchError, PackageError, BuildFailed) as err:
            self.note(str(err))
            planned = Outcome("FAILED", CODE_INVALID_ARGUMENT, str(err))
        except EngineGone as err:  # the engine that answered at start answers no more
            self.note(str(err))
            planned = Outcome("FAILED", CODE_UNAVAILABLE, str(err))
        except Exception as err:  # noqa: BLE001 - ends the job visibly
            planned = error_outcome(err, self.ctx.home.root)
        self.serial.send(lambda: self._begin(planned))

    def _begin(self, planned: list[Launch] | Outcome) -> None:
        if isinstance(planned, Outcome):
            self._end(planned)
            return
        self.note(f"starting {len(planned)} replica(s): {', '.join(la.name for la in planned)}")
        scheduling = self.spec.get("scheduling", {})
        timeout = scheduling.get("timeout", "")
        self.run = JobReplicas(
            planned,
            self.controls,
            policy=RetryPolicy.from_scheduling(scheduling),
            timeout_s=duration_seconds(timeout) if timeout else None,
            on_started=self._started,
            note=self.note,
            kill=self.manager.kill,
            wake=lambda: self.serial.send(self._step),
            clock=self.manager.monotonic,
            terminator=self.manager.engine.terminations.submit,
            full=lambda: store_full(self.ctx.home.root),
            runner=self.manager.runner,
            metric_file=no_metric_file if self.ctx.trial_id is None else self.ctx.files.metric_file,
        )
        self.phase = "running"
        outcome = self.run.begin()
        if outcome is not None:
            self._end(outcome)
            return
        first, self.first = self.first, None
        access = {la.name: la.web_access for la in planned if la.web_access}
        self.manager.set_state(
            self.name, JobState.JOB_STATE_RUNNING, started=first or [], web_access=access
        )
        if self.ctx.trial_id is None:  # a trial's logs stay in its folder (field_coverage)
            try:
                self.upload = uploads.start(
                    self.ctx.job_id,
                    self.spec,
                    self.ctx.files,
                    self.ctx.home.gcs,
                    self.ctx.vertex_address,
                    self.ctx.storage_env,
                    self.note,
                )
            except OSError as err:
                self.note(f"the TensorBoard uploader could not start: {err}")
        self._step()

    def _started(self, replicas: list[Replica]) -> None:
        """Replicas started: the first ones are recorded with the RUNNING state, those of a
        restart at once."""
        if self.first is not None:
            self.first += replicas
        else:
            self.manager.record_groups(self.name, replicas)

    def _step(self) -> None:
        if self.phase != "running" or self.run is None:
            return
        outcome = self.run.step()
        if outcome is not None:
            self._end(outcome)
            return
        due = self.run.next_wake()
        timer = self.timer
        if timer is not None and (timer.when != due or timer.when <= time.monotonic()):
            timer.cancel()  # changed, or fell due already
            self.timer = None
        if due is not None and self.timer is None:
            self.timer = self.manager.engine.timers.at(due, lambda: self.serial.send(self._step))

    def _failed(self, err: BaseException) -> None:
        """A step raised: the job ends FAILED (its disk named when it is full)."""
        self._end(error_outcome(err, self.ctx.home.root))

    def _end(self, outcome: Outcome) -> None:
        if self.phase == "ended":
            return
        self.phase = "ended"
        if self.timer is not None:
            self.timer.cancel()
        run = self.run
        upload, self.upload = self.upload, None
        try:
            stopping = run is not None and run.running()
        except Exception:  # noqa: BLE001 - when in doubt, stop as usual
            stopping = True
        if stopping or upload is not None:

            def wind_up() -> None:  # on the terminating pool: the grace period holds no job thread
                try:
                    if run is not None:
                        run.close()
                    if upload is not None:  # its last cycle, before the end is told
                        upload.finish()
                finally:
                    self.serial.send(lambda: self._ended(outcome))

            try:
                self.manager.engine.terminations.submit(wind_up)
                return
            except RuntimeError:  # the engine is shut down (the emulator stops): stop here
                if upload is not None:
                    upload.finish(timeout_s=5)
        if run is not None:
            try:
                run.close()  # forgets the replicas' groups (waits only on a stopped engine)
            except Exception:  # noqa: BLE001 - the end is recorded all the same
                pass
        self._ended(outcome)

    def _ended(self, outcome: Outcome) -> None:
        """The job's replicas are gone: record its end, give its replica slots back."""
        message = f": {outcome.message}" if outcome.message else ""
        steps: list[Callable[[], None]] = [
            lambda: self.note(f"ended {outcome.state}{message}"),
            lambda: self.manager.finish(self.name, outcome),
        ]
        if self.ticket is not None:
            ticket, quota = self.ticket, self.manager.quota

            def give_back() -> None:
                if not quota.withdraw(ticket):
                    quota.release(ticket)

            steps.append(give_back)
        steps += [lambda: self.on_end(outcome), lambda: self.manager.unregister(self.name)]
        for step in steps:
            try:
                step()
            except Exception:  # noqa: BLE001 - every step of the end is tried
                pass
