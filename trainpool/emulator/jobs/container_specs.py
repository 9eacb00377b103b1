"""What a replica's container is made of: the engine's image and the container's settings.

Data only, shared by the planner (:mod:`.programs`, :mod:`.launches`), the launch
(:class:`~.processes.Launch`) and the runner (:mod:`.containers`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class EngineImage:
    """An image the engine has: the name a job gave, its id and what its config says."""

    ref: str
    id: str
    digest: str
    """Its repository digest (``NAME@sha256:...``) when it was pushed or pulled, else its id."""
    user: str = ""
    workdir: str = ""
    env: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ContainerLaunch:
    """What a replica's container is made of, beside its :class:`Launch`'s env and log."""

    image: EngineImage
    entrypoint: list[str] | None
    """``containerSpec.command``; None: the image's ENTRYPOINT (and CMD, when no args)."""
    command: list[str] | None
    """``containerSpec.args``; None: the image's CMD (when no command either)."""
    binds: tuple[tuple[str, str, bool], ...] = ()
    """``(source on this machine, target in the container, read-only)``."""
    labels: dict[str, str] = field(default_factory=dict)
    memory_bytes: int | None = None
    """The container's memory, swap included (its machine type's); None: no limit."""
    gpus: int = 0
    """GPUs passed to the container (its pool's ``acceleratorCount``, where the engine has a
    GPU runtime); 0: none."""
