"""What every part of one emulator shares: its root, its records, its faults, stop hooks.

One :class:`EmulatorState` per server. It sits below the job engine and the services:
it knows the root's paths (:class:`trainpool.home.Home`), the database and the records
of every resource (:mod:`trainpool.emulator.records`), the test faults, the address the
server listens on, and what to run when the emulator stops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from trainpool.emulator.faults.config import Faults
from trainpool.emulator.records import migrate
from trainpool.emulator.records.database import Database
from trainpool.emulator.records.resources import Records
from trainpool.home import Home


@dataclass
class EmulatorState:
    """The root directory, the database, the records and the id allocator of one server."""

    root: Path
    faults: Faults = field(default_factory=Faults)
    address: str = ""
    """``unix:PATH`` or ``127.0.0.1:PORT`` once the server listens (services that start
    clients need it)."""
    storage_address: str = ""
    """The full URL of the Cloud Storage JSON API door when the server runs one (what
    replicas get as ``STORAGE_EMULATOR_HOST``); "" when there is no door."""
    home: Home = field(init=False)
    db: Database = field(init=False)
    records: Records = field(init=False)
    _stop_hooks: list[Callable[[], None]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.home = Home(self.root)
        self.db = Database(self.home.database)
        self.records = Records(self.db)
        migrate.move_old_tables(self.db, self.records)

    def new_id(self, sequence: str = "resource") -> str:
        """The next id of ``sequence`` as a string ("1000", "1001", ...); survives restarts."""
        return self.db.new_id(sequence)

    def on_stop(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` when the emulator stops (last registered, first called)."""
        self._stop_hooks.append(hook)

    def close(self) -> None:
        """Run the stop hooks, then close the database."""
        while self._stop_hooks:
            self._stop_hooks.pop()()
        self.db.close()
