"""The local Vertex AI emulator: the training API on loopback, replicas as local processes.

with trainpool.emulator.start(root) as emu:
    os.environ["VERTEX_AI_EMULATOR_HOST"] = emu.address

Rooms: ``api/`` (one module per gRPC service), ``jobs/`` (the engine: replicas started,
watched, restarted, stopped, by Vertex's failure rules), ``sweeps/`` (trials and their
rules), ``pipelines/`` (PipelineJobs and TrainingPipelines), ``builds/`` (Cloud Build),
``records/`` (every resource in SQLite, paging), ``cloud_storage/`` (the JSON API door),
``faults/`` (what tests inject). ``docs/internals.md`` maps them.
"""

from trainpool.emulator.faults.config import Faults, KillFault
from trainpool.emulator.server import SERVICES, Emulator, start
from trainpool.emulator.state import EmulatorState

__all__ = ["SERVICES", "Emulator", "EmulatorState", "Faults", "KillFault", "start"]
