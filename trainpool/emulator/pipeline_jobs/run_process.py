"""``python -m trainpool.emulator.pipeline_jobs.run_process PIPELINE --root R ...``: a PipelineJob.

The process :mod:`.runs` starts for each PipelineJob: :func:`trainpool.kfp_local.command.main`
with each task a container of its image where an engine answers, else in a sandbox of its own
(:func:`.task_containers.launcher`), and the project
number every local project has (:data:`trainpool.emulator.api.resource_manager.PROJECT_NUMBER`,
the default of :func:`trainpool.kfp_local.command.main`), which Vertex puts first in the paths of
a run's artifacts. It imports what starts tasks only, not the emulator's server.
"""

from __future__ import annotations

import sys

from trainpool.emulator.pipeline_jobs.task_containers import launcher
from trainpool.kfp_local import command


def main(argv: list[str] | None = None) -> int:
    return command.main(
        sys.argv[1:] if argv is None else argv,
        launcher,
        prog=f"python -m {__name__}",
    )


if __name__ == "__main__":
    sys.exit(main())
