"""The replica runner: how the job engine starts, signals, waits for and cleans up replicas.

The engine's rules (:mod:`trainpool.emulator.jobs.replicas`: restarts, retries, timeouts,
preemption, the evaluators' grace) never touch a process themselves: they ask a
:class:`ReplicaRunner`. A runner turns a :class:`~trainpool.emulator.jobs.processes.Launch`
(the replica's argv, environment, working directory, mounts and log) into a running
:class:`~trainpool.emulator.jobs.processes.Replica` whose exit it reports
(``Replica.on_exit``), and stops it when the engine says so. This is the seam of TorchX's
``Scheduler`` (``submit``/``describe``/``cancel``/``log_iter``) and of kfp.local's task
handlers (``SubprocessRunner``, ``DockerRunner``): the engine is one, the ways to run a
replica are many.

:data:`HOST_PROCESSES` runs each replica as a process group of this machine, started by the
replica guard (:mod:`trainpool.emulator.jobs.spawner`), so nothing outlives the emulator.
A container runner (each replica a container of its image on a Docker or Podman engine)
plugs in here with the same four methods.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from typing import Protocol

from trainpool.emulator.jobs import processes, spawner
from trainpool.emulator.jobs.processes import Launch, ProcessId, Replica


class ReplicaRunner(Protocol):
    """How replicas run. Every method may be called from any thread."""

    name: str
    """What the job log calls it (``host processes``)."""

    def start(self, launch: Launch) -> Replica:
        """Start one replica; raise ``OSError`` naming it when it cannot start."""
        ...

    def alive(self, replica: Replica) -> bool:
        """Whether the replica, or anything it started, still runs."""
        ...

    def kill(self, replica: Replica) -> None:
        """Kill the replica now, with no grace (a fault's kill, a VM lost)."""
        ...

    def terminate(self, replicas: Sequence[Replica], grace_s: float | None = None) -> None:
        """SIGTERM every replica, wait up to ``grace_s`` for them to go, then kill what is
        left; returns once they are gone."""
        ...

    def clean_up(self, recorded: Sequence[ProcessId]) -> None:
        """Terminate what an earlier emulator on this store started and left running, given
        what it recorded; anything else is left alone."""
        ...


class HostProcesses:
    """Replicas as process groups of this machine (the replica guard starts them)."""

    name = "host processes"

    def start(self, launch: Launch) -> Replica:
        return spawner.start(launch)

    def alive(self, replica: Replica) -> bool:
        return replica.exit_status() is None or processes.group_alive(replica.pgid)

    def kill(self, replica: Replica) -> None:
        processes.signal_group(replica.pgid, signal.SIGKILL)

    def terminate(self, replicas: Sequence[Replica], grace_s: float | None = None) -> None:
        processes.terminate(list(replicas), grace_s)

    def clean_up(self, recorded: Sequence[ProcessId]) -> None:
        processes.terminate_groups(list(recorded))


HOST_PROCESSES: ReplicaRunner = HostProcesses()
