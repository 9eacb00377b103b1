"""Task states read from kfp.local's own transcript.

kfp.local prints everything it does to ``sys.stdout``: its log lines
(``Executing task 'x'``, ``Task 'x' finished with status SUCCESS``,
``Skipping task x``) and each task's streamed output. :class:`TaskLog` is a
text stream put in place of ``sys.stdout`` for the run: it keeps the whole
transcript in a file and turns those lines into task states for the display.
"""

from __future__ import annotations

import io
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_START = re.compile(r"Executing task '([^']+)'")
_END = re.compile(r"Task '([^']+)' finished with status (\w+)")
_SKIP = re.compile(r"Skipping (?:conditional )?task '?([\w.-]+)'?")
_RUN_DIR = re.compile(r'"outputFile": "(.+)/[^/]+/executor_output\.json"')
_STATES = {"SUCCESS": "SUCCEEDED", "FAILURE": "FAILED"}


@dataclass
class TaskState:
    name: str
    state: str = "RUNNING"
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=5))

    @property
    def seconds(self) -> float:
        return (self.ended or time.monotonic()) - self.started


class TaskLog(io.TextIOBase):
    """A write-only text stream that records kfp.local's transcript and task states."""

    def __init__(self, transcript: TextIO) -> None:
        super().__init__()
        self._transcript = transcript
        self._partial = ""
        self._lock = threading.Lock()
        self._current: str | None = None
        self.tasks: dict[str, TaskState] = {}
        self.run_dir: Path | None = None

    @staticmethod
    def plain(text: str) -> str:
        """``text`` without the terminal colour codes kfp.local adds."""
        return _ANSI.sub("", text)

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self._lock:
            self._transcript.write(text)
            self._partial += text
            *lines, self._partial = self._partial.split("\n")
            for line in lines:
                self._line(_ANSI.sub("", line))
        return len(text)

    def flush(self) -> None:
        with self._lock:
            self._transcript.flush()

    def snapshot(self) -> list[TaskState]:
        with self._lock:
            return [
                TaskState(t.name, t.state, t.started, t.ended, deque(t.tail, maxlen=5))
                for t in self.tasks.values()
            ]

    def _line(self, line: str) -> None:
        if match := _START.search(line):
            self._current = match.group(1)
            self.tasks[self._current] = TaskState(self._current)
        elif match := _END.search(line):
            task = self.tasks.setdefault(match.group(1), TaskState(match.group(1)))
            task.state = _STATES.get(match.group(2), match.group(2))
            task.ended = time.monotonic()
        elif match := _SKIP.search(line):
            name = match.group(1)
            self.tasks[name] = TaskState(name, "SKIPPED", ended=time.monotonic())
        elif self._current and line.strip():
            if self.run_dir is None and (match := _RUN_DIR.search(line)):
                self.run_dir = Path(match.group(1))
            current = self.tasks.get(self._current)
            if current is not None and current.state == "RUNNING":
                current.tail.append(line.strip())
