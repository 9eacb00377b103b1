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

from trainpool.emulator.cloud_storage.access import DoorKey
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
    storage: DoorKey | None = None
    """The Cloud Storage door's address and secret while it serves (None: not served)."""
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

    @property
    def storage_address(self) -> str | None:
        """``http://127.0.0.1:PORT/<secret>``: ``STORAGE_EMULATOR_HOST`` for this store's
        Cloud Storage door, or None when it is not served."""
        return self.storage.url if self.storage is not None else None

    def storage_env(self) -> dict[str, str]:
        """What points google-cloud-storage and gcloud at the door ({} when not served):
        ``STORAGE_EMULATOR_HOST``, ``CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE``,
        ``CLOUDSDK_AUTH_ACCESS_TOKEN_FILE`` (:meth:`DoorKey.client_env`)."""
        return self.storage.client_env() if self.storage is not None else {}

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
