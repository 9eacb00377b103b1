"""Watching a sweep's running trials for the study's automated stopping rule.

The rules themselves are :mod:`trainpool.emulator.sweeps.trial_rules`; this module feeds
them. While a sweep whose study has an ``automated_stopping_spec`` runs, :class:`TrialWatch`
looks at each running trial's metric file (workerpool0-0's, where ``Trial.measurements``
come from) every :data:`WATCH_S` seconds: one ``stat`` per running trial, the file read only
when it changed, and the rule asked again only for trials with new measurements (or all of
them when a trial has just completed). A sweep without a stopping rule has no watch at all.

Measurements are kept as they are read, so a trial reporting more than cloudml-hypertune's
last 100 entries (it rewrites the file with the last 100) still has every report the watch
saw. The x of each point is the reported ``global_step``, or with ``use_elapsed_duration``
the seconds from the trial's start to the report (the elapsed time
``Trial.measurements[].elapsed_duration`` carries).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.cloud.aiplatform_v1.types.study import Trial

from trainpool.emulator.jobs.manager import JobManager
from trainpool.emulator.sweeps.trial_rules import Completed, StopDecision, StoppingRule
from trainpool.runtime.hypertune import MetricRecord, read_metrics

WATCH_S = 0.25
"""How often running trials' metric files are looked at (seconds)."""


@dataclass
class _Tail:
    """A running trial's metric file and every record read from it so far."""

    path: Path
    started: float
    stamp: tuple[int, int] | None = None
    records: list[MetricRecord] = field(default_factory=list)

    def read(self) -> bool:
        """Read the file if it changed since the last look; True when records were added."""
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return False
        stamp = (info.st_mtime_ns, info.st_size)
        if stamp == self.stamp:
            return False
        self.stamp = stamp
        try:
            fresh = read_metrics(str(self.path))
        except ValueError:  # a line that is no measurement: the trial's end reports it
            return False
        return self.add(fresh)

    def add(self, fresh: list[MetricRecord]) -> bool:
        last = self.records[-1].timestamp if self.records else float("-inf")
        new = [r for r in fresh if r.timestamp > last]
        self.records += new
        return bool(new)


class TrialWatch:
    """The stopping rule applied to the running trials of one sweep."""

    def __init__(
        self,
        rule: StoppingRule,
        metric_id: str,
        goal: str,
        interval_s: float = WATCH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rule = rule
        self.metric_id = metric_id
        self.goal = goal
        self.interval_s = interval_s
        self.clock = clock
        self.completed: list[Completed] = []
        self._tails: dict[str, _Tail] = {}
        self._next = 0.0
        self._news = False

    def curve(self, records: list[MetricRecord], started: float) -> list[tuple[float, float]]:
        """The objective's ``(x, value)`` of ``records``, on the rule's axis."""
        elapsed = self.rule.use_elapsed_duration
        return [
            (max(0.0, r.timestamp - started) if elapsed else float(r.global_step), value)
            for r in records
            if (value := r.values.get(self.metric_id)) is not None
        ]

    def start(self, trial_id: str, metric_file: Path, started: float) -> None:
        """Watch a trial that started at ``started`` (epoch seconds)."""
        self._tails[trial_id] = _Tail(metric_file, started)

    def check(self, skip: set[str]) -> list[tuple[str, StopDecision]]:
        """When due: the running trials (but ``skip``) the rule stops now."""
        now = self.clock()
        if now < self._next:
            return []
        self._next = now + self.interval_s
        news, self._news = self._news, False
        stops = []
        for trial_id, tail in self._tails.items():
            if tail.read() or news:
                if trial_id in skip:
                    continue
                pending = self.curve(tail.records, tail.started)
                decision = self.rule.check(pending, self.completed, self.goal) if pending else None
                if decision is not None:
                    stops.append((trial_id, decision))
        return stops

    def end(self, trial_id: str, fresh: list[MetricRecord]) -> list[MetricRecord]:
        """Stop watching a trial that ended; every record seen of it, ``fresh`` (the file's
        final content) included."""
        tail = self._tails.pop(trial_id, None)
        if tail is None:
            return fresh
        tail.add(fresh)
        return tail.records

    def complete(self, records: list[MetricRecord], started: float, final: float) -> None:
        """A trial ran to its end and succeeded with ``final``: the rules compare with it."""
        self.completed.append(Completed(self.curve(records, started), final))
        self._news = True


class EarlyStopping:
    """A sweep's side of its stopping rule: trials watched while they run; a trial the rule
    stops goes STOPPING ("Indicates that the Trial should stop according to the service",
    ``Trial.State``), its CustomJob is stopped (:meth:`JobManager.stop`: CANCELLED, code 1, the
    rule and the step as its message), and the sweep records it SUCCEEDED with the
    measurement ``measurementSelectionType`` selects among those it reported. Why SUCCEEDED:
    ``Trial.State`` has no early-stopped final state, INFEASIBLE is for a trial "done but
    missing the final_measurement", and a trial completed without a final measurement gets
    "a previously reported measurement" auto-selected (``CompleteTrialRequest``, aiplatform
    v1 ``vizier_service.proto``). Every decision is written to the sweep's job log: the
    rule, the step and the figures that decided."""

    def __init__(
        self,
        manager: JobManager,
        name: str,
        rule: StoppingRule,
        metric_id: str,
        goal: str,
        note: Callable[[str], None],
    ) -> None:
        self.manager = manager
        self.name = name
        self.rule = rule
        self.metric_id = metric_id
        self.note = note
        self.watch = TrialWatch(rule, metric_id, goal)
        self.jobs: dict[str, str] = {}  # trial id -> its CustomJob
        self.stopping: dict[str, StopDecision] = {}

    def start(self, trial_id: str, job_name: str, metric_file: Path, started: float) -> None:
        self.jobs[trial_id] = job_name
        self.watch.start(trial_id, metric_file, started)

    def check(self) -> None:
        """Stop the running trials the rule stops now (when a look is due)."""
        for trial_id, decision in self.watch.check(set(self.stopping)):
            self.stopping[trial_id] = decision
            index = int(trial_id) - 1

            def mark(job: Any, index: int = index) -> None:
                job.trials[index].state = Trial.State.STOPPING

            self.manager.update(self.name, mark)
            where = f"{self.rule.axis} {decision.at:g}"
            job_name = self.jobs[trial_id]
            self.note(
                f"trial {trial_id} STOPPING at {where} by the {self.rule.kind} rule: "
                f"{decision.why}; stopping {job_name}"
            )
            message = f"Stopped early by the study's {self.rule.field} at {where}: {decision.why}."
            self.manager.stop(job_name, message)

    def end(
        self, trial_id: str, state: str, records: list[MetricRecord], started: float
    ) -> tuple[list[MetricRecord], bool]:
        """A trial's job ended in ``state``: every record seen of it (a measurement the rule
        adds included), and whether the rule stopped it (its job then ended CANCELLED)."""
        self.jobs.pop(trial_id, None)
        records = self.watch.end(trial_id, records)
        decision = self.stopping.pop(trial_id, None)
        if decision is None or state != "CANCELLED":
            return records, False
        if decision.added is not None:
            records = [*records, self._predicted(records, decision.added, started)]
        return records, True

    def _predicted(
        self, records: list[MetricRecord], added: tuple[float, float], started: float
    ) -> MetricRecord:
        """The measurement the rule adds (convex: the predicted objective at
        ``max_step_count``, or at that many seconds with ``use_elapsed_duration``)."""
        x, value = added
        last = records[-1] if records else None
        elapsed = self.rule.use_elapsed_duration
        return MetricRecord(
            timestamp=started + x if elapsed or last is None else last.timestamp,
            trial=last.trial if last else "",
            global_step=(last.global_step if last else 0) if elapsed else int(x),
            checkpoint_path="",
            values={self.metric_id: value},
        )
