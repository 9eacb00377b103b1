"""The local Vertex AI emulator: the training API on loopback, replicas as local processes.

with trainpool.emulator.start(root) as emu:
    os.environ["VERTEX_AI_EMULATOR_HOST"] = emu.address
"""

from trainpool.emulator.execution import KillFault
from trainpool.emulator.faults import Faults
from trainpool.emulator.server import SERVICES, Emulator, start
from trainpool.emulator.state import EmulatorState

__all__ = ["SERVICES", "Emulator", "EmulatorState", "Faults", "KillFault", "start"]
