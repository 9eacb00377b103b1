"""A compiled pipeline YAML executed with kfp.local: what Vertex AI Pipelines does around a
run (placeholders, uploaded sources, the tasks' environment), done locally.

:class:`trainpool.kfprun.execute.Run` prepares and executes one run against the emulator
that ``VERTEX_AI_EMULATOR_HOST`` names. ``trainpool run --local``
(:mod:`trainpool.localrun`) puts a live display, an emulator and its jobs' summary around
it; the emulator's PipelineService runs each PipelineJob through
:mod:`trainpool.kfprun.command` in a process of its own.
"""
