"""What every part of one emulator shares: its root, its records, its faults, stop hooks.

One :class:`EmulatorState` per server. It sits below the job engine and the services:
it knows the root's paths (:class:`trainpool.home.Home`), the database and the records
of every resource (:mod:`trainpool.emulator.records`), the emulator's clock
(:mod:`trainpool.emulator.clock`, its offset saved in the database), the test faults, the
address the server listens on, and what to run when the emulator stops. The parts several
services share (the pipeline runs, the schedule firer, ML Metadata, ...) are not found here:
the server makes them and hands each service its own (``trainpool.emulator.server``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainpool.emulator.clock import Clock
from trainpool.emulator.cloud_storage.access import DoorKey
from trainpool.emulator.faults.config import Faults
from trainpool.emulator.records import migrate
from trainpool.emulator.records.database import Database
from trainpool.emulator.records.operations import Operations
from trainpool.emulator.records.resources import Records
from trainpool.home import Home

CLOCK_OFFSET = "clock_offset_s"
"""The database setting that holds the clock's offset (seconds ahead of real time)."""


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
    rest_address: str = ""
    """``http://127.0.0.1:PORT``: the REST door (:mod:`trainpool.emulator.rest`) while it
    serves; it takes the storage door's secret."""
    proxy_address: str = ""
    """``http://127.0.0.1:PORT``: the HTTPS proxy (:mod:`trainpool.emulator.proxy`)."""
    services: dict[str, Any] = field(default_factory=dict)
    """Every service served, by full name (``trainpool.emulator.api.rpc.Service``): what
    each door (gRPC, REST, v1beta1) calls."""
    twins: Any = None
    """The v1beta1 twins of the Vertex AI services (``trainpool.emulator.api.versions.Twins``)."""
    home: Home = field(init=False)
    db: Database = field(init=False)
    records: Records = field(init=False)
    operations: Operations = field(init=False)
    clock: Clock = field(init=False)
    _close_hooks: list[Callable[[], None]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.home = Home(self.root)
        self.db = Database(self.home.database)
        db = self.db
        offset = float(db.setting(CLOCK_OFFSET) or 0.0)
        self.clock = Clock(offset, on_change=lambda s: db.set_setting(CLOCK_OFFSET, repr(s)))
        self.records = Records(self.db, self.clock)
        self.operations = Operations(self.db)
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

    def finished(self, resource: str, response: Any = None) -> Any:
        """A finished long-running operation on ``resource`` (its name is
        ``<resource>/operations/<id>``), kept so clients can poll it; ``response`` is what
        it returns (``Empty`` when None)."""
        return self.operations.done(f"{resource}/operations/{self.new_id('operation')}", response)

    def on_close(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` when the emulator stops (last registered, first called)."""
        self._close_hooks.append(hook)

    def close(self) -> None:
        """Run the stop hooks, then close the database."""
        while self._close_hooks:
            self._close_hooks.pop()()
        self.db.close()
