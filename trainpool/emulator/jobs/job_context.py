"""What every replica of one job (or one trial) shares: a :class:`JobContext`, given to
:func:`trainpool.emulator.jobs.launches.plan_launches`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trainpool.home import Home, JobFiles

if TYPE_CHECKING:
    from trainpool.emulator.jobs.containers import ContainerEngine


@dataclass(frozen=True)
class JobContext:
    """What every replica of one job (or one trial) shares."""

    home: Home
    job_id: str
    files: JobFiles
    project: str
    region: str
    trial_id: str | None = None
    storage_env: Mapping[str, str] = field(default_factory=dict)
    """What points Cloud Storage clients at the door ({} when the emulator serves none)."""
    vertex_address: str = ""
    """This emulator's address, which replicas' Vertex AI clients are pointed at
    (:mod:`.vertex_access`; "" : not pointed)."""
    rest_address: str = ""
    proxy_address: str = ""
    """This emulator's REST door and HTTPS proxy, which every other client of a replica is
    pointed at as under ``trainpool exec`` (:func:`.vertex_access.https_env`; "": none)."""
    containers: ContainerEngine | None = None
    """The container engine replicas of its images run on (:mod:`.containers`); None: none."""
    no_containers: str = ""
    """Why there is no engine ("" when there is one), for the job log."""
    unpushed: Callable[[str], str] | None = None
    """What the job log says of an image the engine has under an Artifact Registry name
    that was never pushed to the emulator's Artifact Registry ("" : pushed, or not such a
    name); None: not checked."""
