"""The schedule firer: a thread that starts each Schedule's runs when the clock says they
are due, by the rules of :mod:`trainpool.emulator.schedules.rules`.

One :class:`Firer` per server (:func:`start_firer`). A pass (:meth:`Firer.tick`) takes every
schedule that is not COMPLETED (and those with queued runs) and, at the clock's time:

1. starts its queued runs while its limits allow (not while PAUSED);
2. evaluates each fire time from ``next_run_time`` up to now, in order: the run starts
   (a PipelineJob created by :func:`trainpool.emulator.pipeline_jobs.jobs.create` with
   ``schedule_name`` set, run as ``trainpool run --local`` runs it), or waits in the
   queue, or is skipped, and ``next_run_time`` moves to the next fire time;
3. marks it COMPLETED when ``max_run_count`` is reached or ``end_time`` has passed.

The thread runs a pass when a fire time comes (it sleeps until then on the emulator's
clock, at most :data:`POLL_S`), when a run ends (a slot frees), when the clock is
advanced, and when a schedule changes. :meth:`Firer.advance_to` moves the clock through
every fire time up to a target, one at a time, with a pass at each: each run is created
at its own fire time, and a run started at one fire time is still executing at the next
(it counts as active there, so it makes the next one wait or be skipped as the schedule
says). A week of nightly runs then takes the runs' own time, not a week.

Fire times that passed while no emulator served the root are skipped when the next one
starts (the log says how many), as if the schedule had been paused without ``catch_up``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from google.cloud.aiplatform_v1.types import schedule as sc

from trainpool.emulator.pipeline_jobs import jobs
from trainpool.emulator.pipeline_jobs.runs import TERMINAL, PipelineJobRunner
from trainpool.emulator.records.kinds import PIPELINE_JOBS, SCHEDULES, parent_of
from trainpool.emulator.records.resources import AlreadyExists
from trainpool.emulator.schedules import rules
from trainpool.emulator.schedules.ledger import Ledger, stamp
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError

State = sc.Schedule.State
POLL_S = 1.0
"""The longest the thread sleeps between passes (real seconds)."""
IDLE_POLL_S = 0.1


@dataclass
class Fired:
    """What passes did: ``events`` (log lines, each ``<schedule id> <what>``) and the
    PipelineJobs ``started``."""

    events: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    idle: bool = True
    """False when a wait for the runs to end gave up."""


class Firer:
    """Starts the runs of one emulator's schedules; its lock also guards their changes."""

    def __init__(self, state: EmulatorState, runs: PipelineJobRunner) -> None:
        self.state = state
        self.runs = runs
        self.records = state.records
        self.clock = state.clock
        self.ledger = Ledger(state.db, state.home)
        self.lock = threading.RLock()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="schedule-firer", daemon=True)

    # the thread
    def start(self) -> None:
        self.recover()
        self.runs.on_finish(lambda _: self.wake())
        self.clock.on_advance(lambda _: self.wake())
        self._thread.start()

    def close(self) -> None:
        self._closing.set()
        self._wake.set()
        self._thread.join(timeout=10)

    def wake(self) -> None:
        """Run a pass soon (a schedule changed, a run ended, the clock moved)."""
        self._wake.set()

    def _loop(self) -> None:
        while not self._closing.is_set():
            self.tick()
            due = self.next_due()
            wait = POLL_S
            if due is not None:
                wait = min(POLL_S, max(0.0, (due - self.clock.now()).total_seconds()))
            self._wake.wait(wait)
            self._wake.clear()

    # passes
    def tick(self, fired: Fired | None = None) -> Fired:
        """One pass over every schedule at the clock's time; what it did (added to
        ``fired``)."""
        fired = fired if fired is not None else Fired()
        with self.lock:
            if self._closing.is_set():
                return fired
            names = self.records.names(SCHEDULES, not_states=[State.COMPLETED])
            names += [n for n in self.ledger.queued_schedules() if n not in names]
            for name in names:
                self._fire(name, fired)
        return fired

    def next_due(self) -> datetime | None:
        """The earliest ``next_run_time`` of an ACTIVE schedule."""
        times = [
            when
            for name in self.records.names(SCHEDULES, states=[State.ACTIVE])
            if (found := self.records.get(SCHEDULES, name)) is not None
            and (when := rules.next_run(found)) is not None
        ]
        return min(times, default=None)

    def advance_to(self, target: datetime, wait_s: float | None = None) -> Fired:
        """Move the clock to ``target`` through every fire time before it, with a pass at
        each (a ``target`` already passed moves nothing); with ``wait_s``, wait at each fire
        time (and at the end) until the runs have ended, at most ``wait_s`` in all."""
        return self._advance(lambda: target, lambda: self.clock.reach(target), wait_s)

    def advance_by(self, by: timedelta, wait_s: float | None = None) -> Fired:
        """Move the clock forward by exactly ``by`` (its offset grows by ``by``) through
        every fire time on the way, as :meth:`advance_to` does."""
        end = self.clock.offset_s + by.total_seconds()

        def target() -> datetime:
            return self.clock.now() + timedelta(seconds=end - self.clock.offset_s)

        def finish() -> None:
            self.clock.advance(timedelta(seconds=max(0.0, end - self.clock.offset_s)))

        return self._advance(target, finish, wait_s)

    def _advance(
        self, target: Callable[[], datetime], finish: Callable[[], object], wait_s: float | None
    ) -> Fired:
        fired = Fired()
        deadline = time.monotonic() + (wait_s or 0.0)
        while True:
            with self.lock:
                due = self.next_due()
                if due is None or due > target():
                    break
                self.clock.reach(due)
                self.tick(fired)
                after = self.next_due()
            if wait_s is not None:
                self.wait_idle(deadline - time.monotonic(), fired)
            if after is not None and after <= due:
                break  # nothing moved (cannot happen: each pass moves next_run_time)
        with self.lock:
            finish()
            self.tick(fired)
        if wait_s is not None:
            self.wait_idle(deadline - time.monotonic(), fired)
        return fired

    def active_runs(self, name: str) -> int:
        """The schedule's PipelineJobs in a non-terminal state."""
        return self.records.count(
            PIPELINE_JOBS,
            parent_of(name),
            filter=f'schedule_name="{name}"',
            not_states=TERMINAL,
        )

    def idle(self) -> bool:
        """True when no run is queued and every run a schedule started (deleted ones' too)
        has ended."""
        if self.ledger.queued_schedules():
            return False
        scheduled = 'schedule_name!=""'
        return self.records.count(PIPELINE_JOBS, None, filter=scheduled, not_states=TERMINAL) == 0

    def wait_idle(self, timeout_s: float, fired: Fired | None = None) -> bool:
        """Wait until :meth:`idle` (runs ended, nothing queued), running passes (what they
        did goes to ``fired``, whose ``idle`` turns False after ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        idle = self.idle()
        while not idle and time.monotonic() < deadline:
            time.sleep(IDLE_POLL_S)
            self.tick(fired)
            idle = self.idle()
        if fired is not None and not idle:
            fired.idle = False
        return idle

    # one schedule
    def _fire(self, name: str, fired: Fired) -> None:
        schedule = self.records.get(SCHEDULES, name)
        if schedule is None:  # deleted: nothing of it may start
            self.ledger.clear(name)
            return
        if schedule.state == State.PAUSED:
            return
        now = self.clock.now()
        active = self.active_runs(name)
        for entry in self.ledger.waiting(name):
            if rules.run_limit_reason(schedule) or rules.busy_reason(schedule, active):
                break
            self.ledger.pop(entry)
            if self._start(schedule, entry.run_time, fired):
                active += 1
        if schedule.state == State.ACTIVE:
            while (due := rules.next_run(schedule)) is not None and due <= now:
                if rules.run_limit_reason(schedule) or not rules.within_end(schedule, due):
                    break
                busy = rules.busy_reason(schedule, active)
                if busy is None:
                    if self._start(schedule, due, fired):
                        active += 1
                elif schedule.allow_queueing:
                    self.ledger.push(name, due)
                    self._respond(schedule, due, f"queued: {busy}", fired)
                else:
                    self._respond(schedule, due, f"skipped: {busy}", fired)
                rules.set_next_run(schedule, rules.run_after(schedule, due))
            reason = rules.completion_reason(schedule, now)
            if reason is not None:
                self._complete(schedule, reason, fired)
        self._save(schedule)

    def _start(self, schedule: Any, run_time: datetime, fired: Fired) -> bool:
        """Create the run's PipelineJob from the schedule's request template; False (and the
        error in ``last_scheduled_run_response``) when the request is refused."""
        request = rules.run_request(schedule, run_time)
        try:
            job = jobs.create(self.state, self.runs, request, schedule_name=schedule.name)
        except (InputError, AlreadyExists) as err:
            self._respond(schedule, run_time, f"failed: {err}", fired)
            return False
        schedule.started_run_count += 1
        fired.started.append(job.name)
        self._respond(schedule, run_time, job.name, fired, f"started: {job.name}")
        return True

    def _respond(
        self, schedule: Any, run_time: datetime, response: str, fired: Fired, text: str = ""
    ) -> None:
        """Set ``last_scheduled_run_response`` and log the run's fate (``text``, else the
        response)."""
        schedule.last_scheduled_run_response = sc.Schedule.RunResponse(
            scheduled_run_time=run_time, run_response=response
        )
        self.note(schedule.name, f"run of {stamp(run_time)} {text or response}", fired)

    def _complete(self, schedule: Any, reason: str, fired: Fired) -> None:
        schedule.state = State.COMPLETED
        del schedule.next_run_time
        if rules.run_limit_reason(schedule):
            dropped = self.ledger.clear(schedule.name)
            if dropped:
                reason += f"; {dropped} queued run(s) dropped"
        self.note(schedule.name, f"COMPLETED: {reason}", fired)

    def note(self, name: str, text: str, fired: Fired | None = None) -> None:
        """Log ``text`` for schedule ``name`` at the clock's time (and in ``fired``)."""
        self.ledger.note(name, self.clock.now(), text)
        if fired is not None:
            fired.events.append(f"{name.rsplit('/', 1)[-1]} {text}")

    def _save(self, schedule: Any) -> None:
        """Store the output fields a pass changed (not ``update_time``: the user's updates)."""

        def change(stored: Any) -> None:
            for key in ("state", "started_run_count", "last_scheduled_run_response"):
                setattr(stored, key, getattr(schedule, key))
            rules.set_next_run(stored, rules.next_run(schedule))

        try:
            self.records.update(SCHEDULES, schedule.name, change, stamp=False)
        except KeyError:
            pass  # deleted meanwhile

    def recover(self) -> None:
        """Fire times that passed while no emulator served the root are skipped."""
        now = self.clock.now()
        for name in self.records.names(SCHEDULES, states=[State.ACTIVE]):
            schedule = self.records.require(SCHEDULES, name)
            due = rules.next_run(schedule)
            if due is None or due > now:
                continue
            missed, left_out = rules.missed_runs(schedule, now)
            rules.set_next_run(schedule, rules.run_after(schedule, now))
            self.note(
                name,
                f"{len(missed) + left_out} run(s) from {stamp(due)} skipped: the emulator "
                "was not running",
            )
            self._save(schedule)


def start_firer(state: EmulatorState, runs: PipelineJobRunner) -> Firer:
    """The Firer of ``state``'s emulator (its server makes one), started; stopped with the
    emulator, before the pipeline ``runs`` it starts (made after them, it closes first)."""
    firer = Firer(state, runs)
    firer.start()
    state.on_close(firer.close)
    return firer
