"""The local Vertex AI emulator: the training API on loopback, replicas run by a replica runner.

with trainpool.emulator.start(root) as emu:
    os.environ["VERTEX_AI_EMULATOR_HOST"] = emu.address

Rooms: ``api/`` (one module per gRPC service), ``jobs/`` (the engine: replicas started,
watched, restarted, stopped, by Vertex's failure rules), ``sweeps/`` (trials and their
rules), ``pipelines/`` (PipelineJobs and TrainingPipelines), ``builds/`` (Cloud Build),
``records/`` (every resource in SQLite, paging), ``cloud_storage/`` (the JSON API door),
``faults/`` (what tests inject). ``docs/contributing/internals.md`` maps them.

The names below are imported when first asked for: a process that needs one room only (a
PipelineJob's run, :mod:`trainpool.emulator.pipeline_jobs.run_process`, which starts tasks) does
not import the server and every service with it (about 4 s of CPU).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainpool.emulator.faults.config import Faults, KillFault
    from trainpool.emulator.server import SERVICES, Emulator, start
    from trainpool.emulator.state import EmulatorState

__all__ = ["SERVICES", "Emulator", "EmulatorState", "Faults", "KillFault", "start"]
_WHERE = {
    "SERVICES": "trainpool.emulator.server",
    "Emulator": "trainpool.emulator.server",
    "start": "trainpool.emulator.server",
    "EmulatorState": "trainpool.emulator.state",
    "Faults": "trainpool.emulator.faults.config",
    "KillFault": "trainpool.emulator.faults.config",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
