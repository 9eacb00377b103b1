"""``trainpool run PIPELINE.yaml --local``: kfp.local for the tasks, the emulator for Vertex,
a live display and a summary of the run's jobs.

``run_local`` and ``RunResult`` are imported on first use: the CLI reads this package's
defaults (``trainpool.emulated.defaults``) for every command's help, and importing the
emulator with them took 1.1 s of each ``trainpool`` start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainpool.emulated.pipeline_run import RunResult, run_local

__all__ = ["RunResult", "run_local"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from trainpool.emulated import pipeline_run

        return getattr(pipeline_run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
