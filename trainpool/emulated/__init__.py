"""``trainpool run PIPELINE.yaml --local``: kfp.local for the tasks, the emulator for Vertex,
a live display and a summary of the run's jobs."""

from trainpool.emulated.pipeline_run import RunResult, run_local

__all__ = ["RunResult", "run_local"]
