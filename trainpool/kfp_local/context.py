"""The run whose tasks run now: what their placeholders are filled with, where their records go.

One :class:`RunContext` per run of :class:`trainpool.kfp_local.execute.PipelineExecution`,
current while its
tasks run (:func:`trainpool.kfp_local.containers.running`); kfp.local's task handler, resolver
and task executor, swapped or wrapped by :mod:`trainpool.kfp_local.containers` and
:mod:`trainpool.kfp_local.tasks`, read it with :func:`current_run`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trainpool.cluster_env.gcs import VERTEX_MOUNT
from trainpool.kfp_local.launching import Launcher

JSON_ESCAPE = "@@TRAINPOOL_JSON_ESCAPE_{}@@"


@dataclass
class RunContext:
    """The run the tasks belong to: what placeholders are filled with, where its tasks'
    states (``log``), details (``record``, ``cached``) and cache go, and what starts them
    (``launcher``, with ``environ(image)``: a task's variables before its own)."""

    project: str
    location: str
    job_id: str
    log: Any
    launcher: Launcher
    environ: Callable[[str], dict[str, str]]
    record: Callable[[int, dict[str, Any]], None] = field(default=lambda task_id, inputs: None)
    cached: Callable[[int, dict[str, Any]], None] = field(default=lambda task_id, outputs: None)
    pipeline: str = ""
    cache: Any = None
    """The execution cache (:class:`trainpool.kfp_local.cache.TaskCache`); None: none."""
    project_number: str = "0"
    gcs_root: Path | None = None
    """The local store's Cloud Storage folder; tasks see it at ``/gcs`` when ``mounted``."""
    mounted: bool = False

    def values(self) -> dict[str, str]:
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {
            "{{$.pipeline_google_cloud_project_id}}": self.project,
            "{{$.pipeline_google_cloud_location}}": self.location,
            "{{$.pipeline_persistent_resource_id}}": "",
            "{{$.pipeline_service_account}}": "",
            "{{$.pipeline_network}}": "",
            "{{$.pipeline_encryption_key_name}}": "",
            "{{$.pipeline_job_resource_name}}": self.resource_name,
            "{{$.pipeline_job_uuid}}": self.job_id,
            "{{$.pipeline_job_create_time_utc}}": now,
            "{{$.pipeline_job_schedule_time_utc}}": now,
            "{{$.json_escape[0]}}": JSON_ESCAPE.format(0),
            "{{$.json_escape[1]}}": JSON_ESCAPE.format(1),
        }

    @property
    def resource_name(self) -> str:
        return f"projects/{self.project}/locations/{self.location}/pipelineJobs/{self.job_id}"

    def as_seen(self, value: str, *, path: bool) -> str:
        """A local-store path as a task sees it when the store is at ``/gcs``: an artifact's
        ``gs://`` URI (``path`` False) or its ``/gcs/`` path (True, a file the task writes);
        anything else unchanged."""
        if not self.mounted or self.gcs_root is None or not value or "://" in value:
            return value
        root = str(self.gcs_root)
        if value != root and not value.startswith(root + os.sep):
            return value
        rest = value[len(root) :].lstrip(os.sep)
        return f"{VERTEX_MOUNT}/{rest}" if path else f"gs://{rest}"


_current: list[RunContext] = []
"""The runs whose tasks run now, innermost last."""


def enter(run: RunContext) -> None:
    _current.append(run)


def leave(run: RunContext) -> None:
    _current.remove(run)


def current_run() -> RunContext | None:
    """The run whose tasks run now (None outside one)."""
    return _current[-1] if _current else None
