"""A run's transcript, and its tasks' states as the run records them.

kfp.local prints everything it does to ``sys.stdout`` (its log lines, the tasks' streamed
output); :class:`TaskLog` is a text stream put in place of ``sys.stdout`` for the run that
keeps the whole transcript in a file. The tasks' states are recorded by the run itself as
each task starts and ends (:mod:`trainpool.kfp_local.tasks`), each with the id it has in the
run's task details; only a task kfp.local does not start is read from its transcript: a
condition that is false (``Skipping conditional task``) or an upstream task that failed
(``Skipping task X: upstream task(s) ...``), which Vertex shows as ``NOT_TRIGGERED``
(``PipelineTaskDetail.State``: "the task was not triggered because the task's trigger
policy is not satisfied", aiplatform v1 ``pipeline_job.proto``).
"""

from __future__ import annotations

import io
import itertools
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SKIP = re.compile(r"Skipping (?:conditional )?task '?([\w.-]+?)'?(?::| \(|$)")
FINAL = frozenset({"SUCCEEDED", "FAILED", "SKIPPED", "CANCELLED", "NOT_TRIGGERED"})
"""Task states that end a task (``SKIPPED``: a cache hit, as Vertex reports one)."""


@dataclass
class TaskState:
    name: str
    state: str = "RUNNING"
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=5))
    task_id: int = 0
    history: list[tuple[float, str, str]] = field(default_factory=list)
    """Every state the task went through, with when and the error that came with it
    (``pipelineTaskStatus``)."""

    @property
    def seconds(self) -> float:
        return (self.ended or time.monotonic()) - self.started


class TaskLog(io.TextIOBase):
    """A write-only text stream that records kfp.local's transcript, and the tasks' states."""

    def __init__(self, transcript: TextIO, first_id: int = 2) -> None:
        super().__init__()
        self._transcript = transcript
        self._partial = ""
        self._lock = threading.Lock()
        self._ids = itertools.count(first_id)
        self.tasks: dict[int, TaskState] = {}
        self.run_dir: Path | None = None
        self.lost = ""
        """The first write of the transcript the disk refused, in words ("" when none): the
        run then fails, saying so, rather than end SUCCEEDED with its transcript cut."""
        self.on_change: Callable[[], None] = lambda: None
        """Called (outside the lock) once a task has begun or changed state: the run's task
        details are written then, so a task that started is on record even if the run is
        killed before its next periodic write."""

    @staticmethod
    def plain(text: str) -> str:
        """``text`` without the terminal colour codes kfp.local adds."""
        return _ANSI.sub("", text)

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self._lock:
            self._guarded(lambda: self._transcript.write(text))
            self._partial += text
            *lines, self._partial = self._partial.split("\n")
            for line in lines:
                if match := _SKIP.search(_ANSI.sub("", line)):
                    task_id = next(self._ids)
                    now = time.monotonic()
                    self.tasks[task_id] = TaskState(
                        match.group(1),
                        "NOT_TRIGGERED",
                        now,
                        now,
                        task_id=task_id,
                        history=[(now, "NOT_TRIGGERED", "")],
                    )
        return len(text)

    def flush(self) -> None:
        with self._lock:
            self._guarded(self._transcript.flush)

    def close_transcript(self) -> None:
        """Close the transcript file; a last flush the disk refuses is recorded, not raised."""
        with self._lock:
            self._guarded(self._transcript.close)

    def _guarded(self, call: Callable[[], object]) -> None:
        """``call`` on the transcript; a full disk keeps it up to there, recorded in
        :attr:`lost` (the first refusal only) and said at the run's end, never raised."""
        try:
            call()
        except OSError as err:
            if self.lost:
                return
            name = str(getattr(self._transcript, "name", "") or "the run's transcript")
            try:
                held = f": it holds its first {os.path.getsize(name)} bytes"
            except OSError:
                held = ""
            self.lost = f"{err.strerror or err} writing the run's transcript {name}{held}"

    def new_id(self) -> int:
        """The id of the next task of the run (ids count up from the run's root task's)."""
        with self._lock:
            return next(self._ids)

    def begin(self, task_id: int, name: str) -> None:
        """Task ``task_id`` starts (again, when it is retried)."""
        now = time.monotonic()
        with self._lock:
            task = self.tasks.get(task_id)
            if task is None:
                history = [(now, "RUNNING", "")]
                self.tasks[task_id] = TaskState(name, task_id=task_id, history=history)
            else:
                task.state, task.ended = "RUNNING", None
                task.history.append((now, "RUNNING", ""))
        self.on_change()

    def retried(self, task_id: int, error: str) -> None:
        """An attempt of task ``task_id`` failed with ``error``, and the task is retried."""
        with self._lock:
            task = self.tasks.get(task_id)
            if task is not None:
                task.history.append((time.monotonic(), "RUNNING", error))

    def end(self, task_id: int, state: str) -> None:
        """Task ``task_id`` is in ``state`` now (a final one ends it)."""
        now = time.monotonic()
        with self._lock:
            task = self.tasks.get(task_id)
            if task is None:
                return
            task.state = state
            task.history.append((now, state, ""))
            if state in FINAL:
                task.ended = now
        self.on_change()

    def say(self, task_id: int, line: str) -> None:
        """A line of task ``task_id``'s output (kept as its last lines)."""
        with self._lock:
            task = self.tasks.get(task_id)
            if task is not None and line.strip():
                task.tail.append(_ANSI.sub("", line).strip())

    def snapshot(self) -> list[TaskState]:
        with self._lock:
            return [
                TaskState(
                    t.name,
                    t.state,
                    t.started,
                    t.ended,
                    deque(t.tail, maxlen=5),
                    t.task_id,
                    list(t.history),
                )
                for t in self.tasks.values()
            ]
