"""The job engine's front: jobs' records, their controls, the quota, recovery after a crash.

:meth:`JobManager.run_custom_job` (and :meth:`JobManager.launch` for a sweep's trials) runs a job as
a :class:`trainpool.emulator.jobs.job_run.JobLifecycle` on the shared
:class:`trainpool.emulator.jobs.engine.Engine`: no job has a thread of its own. Its
:class:`Controls` (cancel, preempt, stop) are set by :meth:`JobManager.cancel`,
:meth:`JobManager.preempt` and :meth:`JobManager.stop`. Replicas running at once are bounded by the
:class:`trainpool.emulator.jobs.quota.Quota`. Each job's replica processes are recorded in
SQLite while they run, so a server that restarts after a crash stops what the dead server
left behind (only processes provably its own) and marks those jobs FAILED with a message
saying so; a sweep's trials that were still running are marked with it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from google.cloud.aiplatform_v1.types import study as study_types
from google.cloud.aiplatform_v1.types.job_state import JobState
from google.rpc import status_pb2

from trainpool.emulator.artifact_registry.repositories import unpushed
from trainpool.emulator.jobs import containers, processes
from trainpool.emulator.jobs.containers import ContainerEngine
from trainpool.emulator.jobs.controls import Controls
from trainpool.emulator.jobs.engine import Engine
from trainpool.emulator.jobs.failure_rules import CODE_INTERNAL
from trainpool.emulator.jobs.job_context import JobContext
from trainpool.emulator.jobs.job_run import JobLifecycle
from trainpool.emulator.jobs.outcomes import Outcome
from trainpool.emulator.jobs.processes import Replica
from trainpool.emulator.jobs.quota import Quota, default_limit, replica_slots
from trainpool.emulator.jobs.runners import HOST_PROCESSES, ReplicaRunner
from trainpool.emulator.records.database import is_disk_full, keep_id
from trainpool.emulator.records.kinds import CUSTOM_JOBS, TUNING_JOBS, Kind, kind_of
from trainpool.emulator.state import EmulatorState
from trainpool.home import JobFiles
from trainpool.spec.normalize import job_spec_rest
from trainpool.spec.states import FINAL_JOB_STATES

TERMINAL = frozenset(getattr(JobState, name) for name in FINAL_JOB_STATES)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS replica_processes (
  job TEXT NOT NULL, replica TEXT NOT NULL,
  pid INTEGER NOT NULL, start_ticks INTEGER NOT NULL, boot_id TEXT NOT NULL
);
"""

RESTART_MESSAGE = (
    "The emulator ended while this job was running (server restart or crash); "
    "its replicas were terminated. Create the job again to rerun it."
)
CLOSED_MESSAGE = "The emulator was closed while this job was running; its replicas were terminated."
Trial = study_types.Trial
UNFINISHED_TRIALS = (Trial.State.ACTIVE, Trial.State.STOPPING, Trial.State.REQUESTED)
SHUTDOWN_WAIT_S = 30.0


def parse_name(name: str) -> tuple[str, str, str]:
    """``(project, location, id)`` of ``projects/P/locations/L/KIND/ID``."""
    parts = name.split("/")
    return parts[1], parts[3], parts[5]


class JobManager:
    """Creates, starts, cancels and recovers jobs on one engine, within one replica quota."""

    def __init__(
        self,
        state: EmulatorState,
        max_replicas: int | None = None,
        runner: ReplicaRunner = HOST_PROCESSES,
        containers: ContainerEngine | None = None,
        no_containers: str = "",
    ) -> None:
        self.state = state
        self.runner = runner
        """How every job's replicas run (:mod:`trainpool.emulator.jobs.runners`)."""
        self.containers = containers
        """The container engine ``runner`` starts containers on (None: none answered)."""
        self.no_containers = no_containers
        self.records = state.records
        self.kill = state.faults.kill
        self.engine = Engine()
        self.quota = Quota(max_replicas or default_limit())
        self._controls: dict[str, Controls] = {}
        self._runs: dict[str, JobLifecycle] = {}
        self.monotonic = state.clock.monotonic
        state.clock.on_advance(lambda _: self._clock_moved())
        self._changed = threading.Condition()
        self._closing = threading.Event()
        state.db.executescript(_SCHEMA)

    # records
    def create(self, kind: Kind, parent: str, job: Any) -> Any:
        """Give ``job`` its name, QUEUED state and times, store it, and return it; a full
        disk raises ``DiskFull`` before anything is stored."""
        self.state.db.require_space()
        stamp = self.state.clock.now()
        job_id = self.state.db.take_id("job")
        job.name = f"{parent}/{kind.collection}/{job_id}"
        job.state = JobState.JOB_STATE_QUEUED
        job.create_time = stamp
        job.update_time = stamp
        return self.records.insert(kind, parent, job, also=lambda c: keep_id(c, "job", job_id))

    def get(self, name: str) -> Any | None:
        """The job (CustomJob or HyperparameterTuningJob) of that name, or None."""
        try:
            kind = kind_of(name)
        except KeyError:
            return None
        return self.records.get(kind, name)

    def require(self, name: str) -> Any:
        """The stored job; KeyError when there is none."""
        return self.records.require(kind_of(name), name)

    def update(self, name: str, change: Callable[[Any], None]) -> Any:
        return self.records.update(kind_of(name), name, change)

    def files(self, name: str, trial_id: str | None = None) -> JobFiles:
        files = self.state.home.job(parse_name(name)[2])
        return files if trial_id is None else files.trial(trial_id)

    def context(self, name: str, trial_id: str | None = None) -> JobContext:
        project, location, job_id = parse_name(name)
        return JobContext(
            self.state.home,
            job_id,
            self.files(name, trial_id),
            project,
            location,
            trial_id,
            storage_env=self.state.storage_env(),
            vertex_address=self.state.address,
            rest_address=self.state.rest_address,
            proxy_address=self.state.proxy_address,
            containers=self.containers,
            no_containers=self.no_containers,
            unpushed=lambda image: unpushed(self.state, image),
        )

    # processes
    def record_groups(self, name: str, replicas: list[Replica]) -> None:
        """Remember each replica's process by pid, start time and boot id, so that recovery
        after a crash stops survivors that are provably these, and never a reused pid. On a
        disk with less than ``MIN_FREE_BYTES`` left it raises ``DiskFull``: a job whose
        replicas (re)start there fails, naming the disk, rather than run on with no room for
        its logs and records."""
        self.state.db.require_space()
        with self.state.db.transaction() as conn:
            _insert_groups(conn, name, replicas)

    # controls and lives
    def register(self, name: str) -> Controls:
        """Make job ``name`` reachable by :meth:`cancel`, :meth:`stop` and :meth:`preempt`
        until :meth:`unregister`; its controls."""
        controls = Controls()
        with self._changed:
            self._controls[name] = controls
        return controls

    def unregister(self, name: str) -> None:
        with self._changed:
            self._controls.pop(name, None)
            self._runs.pop(name, None)
            self._changed.notify_all()

    def check_quota(self, spec: dict[str, Any]) -> None:
        """Raise ``QuotaExceeded`` for a job (or one trial) that could never start here."""
        self.quota.check(replica_slots(spec))

    def launch(
        self,
        name: str,
        spec: dict[str, Any],
        ctx: JobContext,
        controls: Controls,
        on_end: Callable[[Outcome], None] = lambda _: None,
    ) -> None:
        """Run CustomJob ``name`` (registered) with ``spec`` in ``ctx``'s files; ``on_end``
        gets its outcome once it is recorded."""
        run = JobLifecycle(self, name, spec, ctx, controls, on_end)
        with self._changed:
            self._runs[name] = run
        run.start()

    def _clock_moved(self) -> None:
        """The emulator's clock was advanced: every running job looks at its timeout again."""
        with self._changed:
            runs = list(self._runs.values())
        for run in runs:
            run.nudge()

    def run_custom_job(
        self,
        name: str,
        on_end: Callable[[Outcome], None] = lambda _: None,
        spec: dict[str, Any] | None = None,
    ) -> None:
        """Run stored CustomJob ``name`` (``spec``: its job spec as REST JSON, read from the
        record when not given): QUEUED until the quota admits it, PENDING, RUNNING, then its
        outcome."""
        controls = self.register(name)
        if spec is None:
            spec = job_spec_rest(self.require(name).job_spec)
        self.launch(name, spec, self.context(name), controls, on_end)

    def is_running(self, name: str) -> bool:
        """True until job ``name``'s life here has ended (its end recorded and announced)."""
        with self._changed:
            return name in self._controls

    def _controls_of(self, name: str) -> Controls | None:
        with self._changed:
            return self._controls.get(name)

    def cancel(self, name: str) -> bool:
        """Ask a running job to cancel; False when it is not running here."""
        controls = self._controls_of(name)
        if controls is None:
            return False
        controls.cancel.set()
        return True

    def stop(self, name: str, reason: str) -> bool:
        """Stop job ``name`` early for the service (a sweep's stopping rule): its replicas are
        terminated and it ends CANCELLED with ``reason``; False when it is not running here."""
        controls = self._controls_of(name)
        if controls is None:
            return False
        controls.stop.set(reason)
        return True

    def preempt(self, name: str) -> bool:
        """Preempt CustomJob ``name`` (its replicas are terminated, the job fails as Vertex's
        preempted jobs do); False when it is not running here."""
        controls = self._controls_of(name)
        if controls is None:
            return False
        controls.preempt.set()
        return True

    # states
    def set_state(
        self,
        name: str,
        state: int,
        started: list[Replica] | None = None,
        web_access: dict[str, str] | None = None,
    ) -> None:
        """Move job ``name`` to ``state`` (not out of CANCELLING); RUNNING stamps its start.
        ``started``: its first replicas, recorded (:meth:`record_groups`) in the same
        transaction; ``web_access``: its replicas' shells (``web_access_uris``)."""

        def change(job: Any) -> None:
            if web_access:
                job.web_access_uris = web_access
            if job.state == JobState.JOB_STATE_CANCELLING:
                return
            job.state = state
            if state == JobState.JOB_STATE_RUNNING:
                job.start_time = self.state.clock.now()

        if started is None:
            self.update(name, change)
            return
        self.state.db.require_space()
        also = lambda conn: _insert_groups(conn, name, started)  # noqa: E731
        self.records.update(kind_of(name), name, change, also=also)

    def finish(self, name: str, outcome: Outcome) -> None:
        """Record how the job ended; a job cancelled because the emulator stops is FAILED. A
        sweep's trials still running end with it (INFEASIBLE, the job's message). Its
        replica processes are forgotten in the same transaction."""
        if outcome.state == "CANCELLED" and self._closing.is_set():
            outcome = Outcome("FAILED", CODE_INTERNAL, CLOSED_MESSAGE)

        def change(job: Any) -> None:
            job.state = getattr(JobState, f"JOB_STATE_{outcome.state}")
            job.end_time = self.state.clock.now()
            if outcome.code:
                job.error = status_pb2.Status(code=outcome.code, message=outcome.message)
            for trial in getattr(job, "trials", ()):
                if trial.state in UNFINISHED_TRIALS:
                    trial.state = Trial.State.INFEASIBLE
                    trial.infeasible_reason = outcome.message or outcome.state
                    trial.end_time = job.end_time

        def forget(conn: Any) -> None:
            conn.execute("DELETE FROM replica_processes WHERE job = ?", (name,))

        self.records.update(kind_of(name), name, change, also=forget)

    def unfinished(self) -> list[str]:
        """Names of jobs (both kinds) in a state that is not terminal."""
        return [
            name
            for kind in (CUSTOM_JOBS, TUNING_JOBS)
            for name in self.records.names(kind, not_states=TERMINAL)
        ]

    def recover(self) -> None:
        """After a restart: terminate what a dead server left running and mark its jobs FAILED."""
        rows = self.state.db.execute("SELECT pid, start_ticks, boot_id FROM replica_processes")
        self.runner.clean_up(
            [processes.ProcessId(r["pid"], r["start_ticks"], r["boot_id"]) for r in rows]
        )
        self.state.db.execute("DELETE FROM replica_processes")
        for name in self.unfinished():
            self.finish(name, Outcome("FAILED", CODE_INTERNAL, RESTART_MESSAGE))

    def shutdown(self) -> None:
        """End every running job (marked FAILED: the emulator closed) and wait for them."""
        self._closing.set()
        with self._changed:
            running = list(self._controls.values())
        for controls in running:
            controls.cancel.set()
        deadline = time.monotonic() + SHUTDOWN_WAIT_S
        with self._changed:
            while self._controls and time.monotonic() < deadline:
                self._changed.wait(deadline - time.monotonic())
        for name in self.unfinished():
            try:
                self.finish(name, Outcome("FAILED", CODE_INTERNAL, CLOSED_MESSAGE))
            except OSError as err:  # a full disk: the next start marks it (recover)
                if not is_disk_full(err):
                    raise
        self.engine.close()


def _insert_groups(conn: Any, name: str, replicas: list[Replica]) -> None:
    rows = [
        (name, r.launch.name, r.identity.pid, r.identity.start_ticks, r.identity.boot_id)
        for r in replicas
        if r.identity is not None
    ]
    conn.executemany(
        "INSERT INTO replica_processes (job, replica, pid, start_ticks, boot_id) "
        "VALUES (?, ?, ?, ?, ?)",
        rows,
    )


def start_job_manager(state: EmulatorState, max_replicas: int | None = None) -> JobManager:
    """The one JobManager of ``state``'s emulator (``max_replicas`` replicas at once, else the
    default quota), its replicas containers where an engine answers (:mod:`.containers`):
    it recovers what a dead server left running, and stops every job when the emulator
    stops."""
    engine, why = containers.connect()
    if engine is None:
        manager = JobManager(state, max_replicas, no_containers=why)
    else:
        runner = containers.ContainerRunner(engine, state.root)
        manager = JobManager(state, max_replicas, runner=runner, containers=engine)
    manager.recover()
    state.on_close(manager.shutdown)
    return manager
