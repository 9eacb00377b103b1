"""Run a compiled pipeline YAML locally: kfp.local for the tasks, the emulator for Vertex."""

from trainpool.localrun.params import ParamError, load_pipeline_spec, parse_params, pipeline_inputs
from trainpool.localrun.runner import RunResult, run_local

__all__ = [
    "ParamError",
    "RunResult",
    "load_pipeline_spec",
    "parse_params",
    "pipeline_inputs",
    "run_local",
]
