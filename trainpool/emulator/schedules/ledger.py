"""What a Schedule has waiting, and what it did: its queue of runs and its log.

- The queue (SQLite table ``schedule_queue``): runs that came due while the schedule's
  concurrency limit was reached and ``allow_queueing`` is set, and the runs a resume with
  ``catch_up`` backfills, first due first; each keeps its scheduled run time. It survives
  a restart of the emulator.
- The log (``Home.schedule_log(id)``, ``<root>/schedules/<id>/schedule.log``): one line per
  decision, stamped with the emulator's clock: each run started (and its PipelineJob),
  queued or skipped (and why), pause, resume, update, completion. Vertex keeps no such
  history beyond ``last_scheduled_run_response``; ``trainpool schedule runs`` shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from trainpool.emulator.records.database import Database
from trainpool.home import Home

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedule_queue (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  schedule TEXT NOT NULL,
  run_time TEXT NOT NULL,
  backfill INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS schedule_queue_by_schedule ON schedule_queue (schedule, seq);
"""


@dataclass(frozen=True)
class Waiting:
    """A queued run: its place in the queue, its scheduled run time, whether a backfill."""

    seq: int
    run_time: datetime
    backfill: bool


class Ledger:
    """The queues and logs of one emulator's schedules."""

    def __init__(self, db: Database, home: Home) -> None:
        self.db = db
        self.home = home
        db.executescript(_SCHEMA)

    def push(self, schedule: str, run_time: datetime, backfill: bool = False) -> None:
        self.db.execute(
            "INSERT INTO schedule_queue (schedule, run_time, backfill) VALUES (?, ?, ?)",
            (schedule, run_time.isoformat(), int(backfill)),
        )

    def waiting(self, schedule: str) -> list[Waiting]:
        """The queued runs of ``schedule``, first due first."""
        rows = self.db.execute(
            "SELECT seq, run_time, backfill FROM schedule_queue WHERE schedule = ? ORDER BY seq",
            (schedule,),
        )
        return [
            Waiting(int(r["seq"]), datetime.fromisoformat(r["run_time"]), bool(r["backfill"]))
            for r in rows
        ]

    def pop(self, entry: Waiting) -> None:
        self.db.execute("DELETE FROM schedule_queue WHERE seq = ?", (entry.seq,))

    def clear(self, schedule: str) -> int:
        """Drop every queued run of ``schedule``; how many there were."""
        with self.db.transaction() as conn:
            return int(
                conn.execute("DELETE FROM schedule_queue WHERE schedule = ?", (schedule,)).rowcount
            )

    def queued_schedules(self) -> list[str]:
        rows = self.db.execute("SELECT DISTINCT schedule FROM schedule_queue ORDER BY schedule")
        return [str(r["schedule"]) for r in rows]

    def note(self, schedule: str, when: datetime, message: str) -> None:
        """Append ``message`` to the schedule's log, stamped ``when`` (the emulator's time)."""
        path = self.home.schedule_log(schedule.rsplit("/", 1)[-1])
        path.parent.mkdir(parents=True, exist_ok=True)
        stamp = when.isoformat(timespec="seconds").replace("+00:00", "Z")
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"{stamp} {message}\n")


def stamp(when: datetime) -> str:
    """``when`` as RFC 3339 UTC to the second (``2026-01-02T03:00:00Z``)."""
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")
