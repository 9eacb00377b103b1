"""Runs jobs in background threads and keeps track of their processes.

Each job's replica process groups are recorded in SQLite while they run, so a
server that restarts after a crash can stop what the dead server left behind and
mark those jobs FAILED with a message saying so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.cloud.aiplatform_v1.types.job_state import JobState
from google.rpc import status_pb2

from trainpool.emulator import processes
from trainpool.emulator.convert import duration_s, job_spec_rest
from trainpool.emulator.execution import KillFault, Outcome, run_replicas
from trainpool.emulator.failures import CODE_INTERNAL, CODE_INVALID_ARGUMENT, RetryPolicy
from trainpool.emulator.job_log import JobLog
from trainpool.emulator.job_store import JobStore, now
from trainpool.emulator.launches import JobContext, LaunchError, plan_launches
from trainpool.emulator.packages import PackageError
from trainpool.emulator.processes import Replica
from trainpool.emulator.state import EmulatorState

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replica_processes (
  job TEXT NOT NULL, replica TEXT NOT NULL,
  pid INTEGER NOT NULL, start_ticks INTEGER NOT NULL, boot_id TEXT NOT NULL
);
"""

RESTART_MESSAGE = (
    "The emulator stopped while this job was running (server restart or crash); "
    "its replicas were stopped. Create the job again to rerun it."
)
STOPPED_MESSAGE = "The emulator was stopped while this job was running; its replicas were stopped."


@dataclass(frozen=True)
class Controls:
    """How a running job is stopped from outside: ``cancel``, or ``preempt`` (its VMs
    reclaimed, :mod:`trainpool.emulator.preemption`)."""

    cancel: threading.Event = field(default_factory=threading.Event)
    preempt: threading.Event = field(default_factory=threading.Event)


def parse_name(name: str) -> tuple[str, str, str]:
    """``(project, location, id)`` of ``projects/P/locations/L/KIND/ID``."""
    parts = name.split("/")
    return parts[1], parts[3], parts[5]


def run_spec(
    spec: dict[str, Any],
    ctx: JobContext,
    controls: Controls,
    *,
    on_started: Callable[[list[Replica]], None],
    on_running: Callable[[], None] = lambda: None,
    kill: KillFault | None,
) -> Outcome:
    """Plan and run the replicas of one CustomJobSpec; any setup problem is a FAILED outcome.

    ``on_started`` gets every set of replica processes started (restarts too);
    ``on_running`` is called once every replica has started; ``controls`` cancel or
    preempt it.
    """
    note = JobLog(ctx.job_dir / "job.log")
    try:
        launches = plan_launches(spec, ctx, note)
    except (LaunchError, PackageError) as err:
        note(str(err))
        return Outcome("FAILED", CODE_INVALID_ARGUMENT, str(err))
    note(f"starting {len(launches)} replica(s): {', '.join(la.name for la in launches)}")
    scheduling = spec.get("scheduling", {})
    outcome = run_replicas(
        launches,
        cancel=controls.cancel,
        policy=RetryPolicy.from_scheduling(scheduling),
        timeout_s=duration_s(scheduling.get("timeout", "")),
        on_started=on_started,
        on_running=on_running,
        note=note,
        kill=kill,
        preempt=controls.preempt,
    )
    note(f"ended {outcome.state}" + (f": {outcome.message}" if outcome.message else ""))
    return outcome


class Runner:
    """Starts, cancels and recovers jobs; one thread per running job."""

    def __init__(self, state: EmulatorState, store: JobStore, kill: KillFault | None = None):
        self.state = state
        self.store = store
        self.kill = kill
        self._controls: dict[str, Controls] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        state.db.executescript(_SCHEMA)

    def job_dir(self, name: str) -> Path:
        return self.state.jobs_dir(parse_name(name)[2])

    def context(self, name: str, trial_id: str | None = None) -> JobContext:
        project, location, job_id = parse_name(name)
        job_dir = self.job_dir(name)
        if trial_id is not None:
            job_dir = job_dir / f"trial-{trial_id}"
        return JobContext(self.state.root, job_id, job_dir, project, location, trial_id)

    def record_groups(self, name: str, replicas: list[Replica]) -> None:
        """Remember each replica's process by pid, start time and boot id, so that recovery
        after a crash stops survivors that are provably these, and never a reused pid."""
        rows = [
            (name, r.launch.name, r.identity.pid, r.identity.start_ticks, r.identity.boot_id)
            for r in replicas
            if r.identity is not None
        ]
        with self.state.db.transaction() as conn:
            conn.executemany(
                "INSERT INTO replica_processes (job, replica, pid, start_ticks, boot_id) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )

    def forget_groups(self, name: str) -> None:
        self.state.db.execute("DELETE FROM replica_processes WHERE job = ?", (name,))

    def register(self, name: str) -> Controls:
        """Make job ``name`` reachable by :meth:`cancel` and :meth:`preempt` until
        :meth:`unregister`; its events."""
        controls = Controls()
        with self._lock:
            self._controls[name] = controls
        return controls

    def unregister(self, name: str) -> None:
        with self._lock:
            self._controls.pop(name, None)

    def submit(self, name: str, work: Callable[[str, Controls], None]) -> None:
        """Run ``work(name, controls)`` in a thread of its own."""
        controls = self.register(name)
        thread = threading.Thread(target=self._guard, args=(name, work, controls), daemon=True)
        with self._lock:
            self._threads[name] = thread
        thread.start()

    def _guard(self, name: str, work: Callable[[str, Controls], None], controls: Controls) -> None:
        try:
            work(name, controls)
        except Exception as err:  # noqa: BLE001 - a bug must still end the job visibly
            self.finish(name, Outcome("FAILED", CODE_INTERNAL, f"Internal emulator error: {err!r}"))
        finally:
            self.forget_groups(name)
            self.unregister(name)
            with self._lock:
                self._threads.pop(name, None)

    def is_running(self, name: str) -> bool:
        """True while a thread of this runner works on job ``name``."""
        with self._lock:
            return name in self._threads

    def cancel(self, name: str) -> bool:
        """Ask a running job to stop; False when it is not running here."""
        with self._lock:
            controls = self._controls.get(name)
        if controls is None:
            return False
        controls.cancel.set()
        return True

    def preempt(self, name: str) -> bool:
        """Preempt CustomJob ``name`` (its replicas are stopped, the job fails as Vertex's
        preempted jobs do); False when it is not running here."""
        with self._lock:
            controls = self._controls.get(name)
        if controls is None:
            return False
        controls.preempt.set()
        return True

    def set_state(self, name: str, state: int) -> None:
        def change(job: Any) -> None:
            if job.state == JobState.JOB_STATE_CANCELLING:
                return
            job.state = state
            if state == JobState.JOB_STATE_RUNNING:
                job.start_time = now()

        self.store.update(name, change)

    def finish(self, name: str, outcome: Outcome) -> None:
        """Record how the job ended; a job cancelled because the emulator stops is FAILED."""
        if outcome.state == "CANCELLED" and self._stopping.is_set():
            outcome = Outcome("FAILED", CODE_INTERNAL, STOPPED_MESSAGE)

        def change(job: Any) -> None:
            job.state = getattr(JobState, f"JOB_STATE_{outcome.state}")
            job.end_time = now()
            if outcome.code:
                job.error = status_pb2.Status(code=outcome.code, message=outcome.message)

        self.store.update(name, change)

    def run_custom_job(self, name: str, controls: Controls) -> None:
        """The life of one CustomJob: PENDING, RUNNING, then its outcome."""
        job = self.store.require(name)
        self.set_state(name, JobState.JOB_STATE_PENDING)
        spec = job_spec_rest(job.job_spec)

        outcome = run_spec(
            spec,
            self.context(name),
            controls,
            on_started=lambda replicas: self.record_groups(name, replicas),
            on_running=lambda: self.set_state(name, JobState.JOB_STATE_RUNNING),
            kill=self.kill,
        )
        self.finish(name, outcome)

    def recover(self) -> None:
        """After a restart: stop what a dead server left running and mark its jobs FAILED."""
        rows = self.state.db.execute("SELECT pid, start_ticks, boot_id FROM replica_processes")
        processes.stop_groups(
            [processes.ProcessId(r["pid"], r["start_ticks"], r["boot_id"]) for r in rows]
        )
        self.state.db.execute("DELETE FROM replica_processes")
        for name in self.store.unfinished():
            self.finish(name, Outcome("FAILED", CODE_INTERNAL, RESTART_MESSAGE))

    def shutdown(self) -> None:
        """Stop every running job (marked FAILED: the emulator stopped) and wait for them."""
        self._stopping.set()
        with self._lock:
            running = dict(self._threads)
            for controls in self._controls.values():
                controls.cancel.set()
        for thread in running.values():
            thread.join(timeout=30)
        for name in self.store.unfinished():
            self.finish(name, Outcome("FAILED", CODE_INTERNAL, STOPPED_MESSAGE))


_RUNNERS: dict[int, Runner] = {}
_RUNNERS_LOCK = threading.Lock()


def runner_for(state: EmulatorState) -> Runner:
    """The one Runner of ``state``'s emulator, shared by every service that runs CustomJobs.

    The first call recovers what a dead server left running and stops every job when the
    emulator stops.
    """
    with _RUNNERS_LOCK:
        runner = _RUNNERS.get(id(state))
        if runner is not None:
            return runner
        runner = Runner(state, JobStore(state), kill=state.faults.kill)
        runner.recover()
        _RUNNERS[id(state)] = runner

    def stop() -> None:
        runner.shutdown()
        with _RUNNERS_LOCK:
            _RUNNERS.pop(id(state), None)

    state.on_stop(stop)
    return runner
