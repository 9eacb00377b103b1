"""A compiled pipeline YAML executed with kfp.local: what Vertex AI Pipelines does around a
run (placeholders, uploaded sources, the tasks' environment), done locally.

:class:`trainpool.kfp_local.execute.PipelineExecution` prepares and executes one run against
the emulator
that ``VERTEX_AI_EMULATOR_HOST`` names. ``trainpool run --local``
(:mod:`trainpool.emulated`) puts a live display, an emulator and its jobs' summary around
it; the emulator's PipelineService runs each PipelineJob through
:mod:`trainpool.kfp_local.command` in a process of its own.
"""
