"""The emulator's Cloud Logging store: the jobs' entries (:mod:`.entries`), and what clients
write themselves (``WriteLogEntries``: ``gcloud logging write``, google-cloud-logging's
handlers), kept as JSON lines in ``<root>/logging/written.jsonl``.

:meth:`Logs.matching` answers a ``ListLogEntries``: the entries of the asked projects that
the query (:mod:`.query`) matches, oldest first. A query that pins
``resource.labels.job_id`` reads that job's files only; one that pins another
``resource.type`` reads none of the jobs'.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any

from trainpool.emulator.cloud_logging import entries as job_logs
from trainpool.emulator.cloud_logging.grammar import Node
from trainpool.emulator.cloud_logging.query import matches, required
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError

JOB_KINDS = ("customJobs", "hyperparameterTuningJobs")
SWEEP_TRIAL_LABEL = "trainpool-emulator-trial"
"""The label of a sweep's trial CustomJob (``trainpool.emulator.sweeps.sweep.TRIAL_LABEL``):
its lines are the sweep's, under the sweep's job id; asked by its own id, they are its own."""
MAX_WRITE = 1000
MAX_ENTRY_BYTES = 256 * 1024


def projects_of(resource_names: Any, field: str = "resource_names") -> list[str]:
    """The projects of ``projects/P`` (or ``projects/P/locations/L/buckets/B/views/V``)
    resource names; InputError for anything else or none."""
    found: list[str] = []
    for name in resource_names:
        parts = str(name).split("/")
        if len(parts) < 2 or parts[0] != "projects" or not parts[1]:
            raise InputError.of(
                field,
                f"{name!r}: the emulator keeps logs by project; accepted: projects/PROJECT_ID",
            )
        found.append(parts[1])
    if not found:
        raise InputError.of(field, "[] is empty; accepted: one or more projects/PROJECT_ID")
    return list(dict.fromkeys(found))


class Logs:
    """One emulator's log entries."""

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.written_file = state.home.written_log_entries
        self._lock = threading.Lock()

    def jobs(self, projects: list[str], ids: set[str] | None) -> list[tuple[str, str, bool]]:
        """``(project, job id, is a sweep)`` of the jobs to read; a sweep's trial CustomJobs
        only when their id is asked for."""
        kinds = ",".join("?" * len(JOB_KINDS))
        rows = self.state.db.read(
            f"SELECT r.name, r.kind, (SELECT value FROM resource_labels l WHERE l.name = r.name "
            f"AND l.key = ?) AS trial FROM resources r WHERE r.kind IN ({kinds})",
            (SWEEP_TRIAL_LABEL, *JOB_KINDS),
        )
        found = []
        for row in rows:
            parts = str(row["name"]).split("/")
            project, job_id = parts[1], parts[-1]
            if project not in projects or (ids is not None and job_id not in ids):
                continue
            if row["trial"] is not None and ids is None:
                continue
            found.append((project, job_id, row["kind"] == "hyperparameterTuningJobs"))
        return found

    def _all(self, projects: list[str], node: Node | None) -> Iterator[dict[str, Any]]:
        types = required(node, "resource.type")
        if types is None or job_logs.RESOURCE_TYPE in types:
            for project, job_id, sweep in self.jobs(
                projects, required(node, "resource.labels.job_id")
            ):
                files = self.state.home.job(job_id)
                yield from job_logs.job_entries(files, project, job_id, sweep)
        yield from self.written(projects)

    def matching(self, projects: list[str], node: Node | None) -> list[dict[str, Any]]:
        """Every entry of ``projects`` that ``node`` matches, oldest first (by timestamp,
        then insert id)."""
        found = [e for e in self._all(projects, node) if node is None or matches(node, e)]
        found.sort(key=lambda e: (e.get("timestamp", ""), e.get("insertId", "")))
        return found

    def written(self, projects: list[str]) -> Iterator[dict[str, Any]]:
        try:
            handle = self.written_file.open(encoding="utf-8")
        except OSError:
            return
        with handle:
            for line in handle:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if str(entry.get("logName", "")).split("/")[1:2] in ([p] for p in projects):
                    yield entry

    def write(self, new: list[dict[str, Any]]) -> None:
        """Keep entries a client wrote (each already whole: log name, resource, time)."""
        if len(new) > MAX_WRITE:
            raise InputError.of("entries", f"{len(new)} entries; accepted: at most {MAX_WRITE}")
        lines = []
        for index, entry in enumerate(new):
            entry.setdefault("insertId", uuid.uuid4().hex)
            line = json.dumps(entry, separators=(",", ":"))
            if len(line) > MAX_ENTRY_BYTES:
                raise InputError.of(
                    f"entries[{index}]", f"{len(line):,} bytes; accepted: at most 256 KB"
                )
            lines.append(line + "\n")
        self.state.db.require_space()
        self.written_file.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            fd = os.open(self.written_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as handle:
                handle.write("".join(lines))

    def log_names(self, project: str) -> list[str]:
        names: set[str] = set()
        for _, job_id, _ in self.jobs([project], None):
            names |= job_logs.log_names(self.state.home.job(job_id))
        found = {f"projects/{project}/logs/{task}" for task in names}
        found |= {str(e.get("logName")) for e in self.written([project])}
        return sorted(found)
