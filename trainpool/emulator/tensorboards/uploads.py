"""A CustomJob's TensorBoard logs uploaded to its Tensorboard while it runs, as on Vertex.

"Vertex AI TensorBoard streams in Vertex AI TensorBoard logs as they're written to Cloud
Storage" from ``AIP_TENSORBOARD_LOG_DIR`` (https://cloud.google.com/vertex-ai/docs/
experiments/tensorboard-training), into the TensorboardExperiment named after the job's id
(the SDK's ``utils/console_utils.py`` ``custom_job_tensorboard_console_uri`` links
``{tensorboard}/experiments/{custom job id}``, and ``jobs.py`` ``_block_until_complete``
lists that experiment's runs to end them). An :class:`Upload` is the SDK's own uploader
(:mod:`.uploader_process`) in a process of its own, started when the job is RUNNING and
asked to finish (one last upload cycle) once its replicas have ended, before the job's end
is recorded, so what the trainer wrote is in the Tensorboard when the job says it ended.
Its log is ``uploader.log`` in the job's folder.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from trainpool.cluster_env.env import output_dirs
from trainpool.cluster_env.gcs import to_path
from trainpool.emulator.tensorboards import uploader_process
from trainpool.home import JobFiles
from trainpool.redirect import environment

UPLOADER = Path(uploader_process.__file__)
FINISH_S = 120.0
"""How long the last upload cycle may take before the uploader is stopped."""
EXTRA = (
    "the job's TensorBoard logs are not uploaded: TensorBoard is not installed with the "
    "emulator (pip install 'trainpool[tensorboard]'); they stay in AIP_TENSORBOARD_LOG_DIR"
)


class Upload:
    """One job's running uploader."""

    def __init__(self, process: subprocess.Popen[bytes], log: Path, note: Callable[[str], None]):
        self.process = process
        self.log = log
        self.note = note

    def finish(self, timeout_s: float = FINISH_S) -> None:
        """Ask for the last upload cycle and wait for it (stopped after ``timeout_s``)."""
        stdin: IO[bytes] | None = self.process.stdin
        if stdin is not None:
            try:
                stdin.close()
            except OSError:
                pass
        try:
            status = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            status = self.process.wait()
            self.note(
                f"the TensorBoard uploader did not finish in {timeout_s:.0f} s and was "
                f"stopped; what it uploaded is in the Tensorboard (log: {self.log})"
            )
            return
        if status == 0:
            self.note("the TensorBoard uploader uploaded the job's logs and ended")
        else:
            self.note(
                f"the TensorBoard uploader exited with status {status}; the logs may be "
                f"uploaded in part (log: {self.log})"
            )


def start(
    job_id: str,
    spec: dict[str, Any],
    files: JobFiles,
    gcs_root: Path,
    address: str,
    storage_env: Mapping[str, str],
    note: Callable[[str], None],
    trial_id: str | None = None,
) -> Upload | None:
    """The uploader of a job whose ``spec`` (REST JSON) names a ``tensorboard``; None (the
    job log says why) when there is nothing it can upload."""
    tensorboard = spec.get("tensorboard", "")
    if not tensorboard:
        return None
    logdir = output_dirs(spec, trial_id).get("AIP_TENSORBOARD_LOG_DIR")
    if not logdir:
        note(
            "tensorboard is set but baseOutputDirectory is not, so replicas get no "
            "AIP_TENSORBOARD_LOG_DIR: nothing is uploaded"
        )
        return None
    if importlib.util.find_spec("tensorboard") is None:
        note(EXTRA)
        return None
    local = Path(to_path(logdir, gcs_root, "baseOutputDirectory"))
    local.mkdir(parents=True, exist_ok=True)
    project = tensorboard.split("/")[1]
    env = environment(address, storage_env, project=project, base=dict(os.environ))
    log = files.dir / "uploader.log"
    argv = [sys.executable, str(UPLOADER), "--tensorboard", tensorboard]
    argv += ["--experiment", job_id, "--display-name", job_id, "--logdir", str(local)]
    with open(log, "ab") as out:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=files.dir,
            start_new_session=True,
        )
    note(
        f"uploading AIP_TENSORBOARD_LOG_DIR ({logdir}) to {tensorboard}/experiments/{job_id} "
        f"as it is written, with the Vertex AI SDK's uploader (log: {log})"
    )
    return Upload(process, log, note)
