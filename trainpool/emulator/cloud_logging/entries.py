"""A training job's logs as the Cloud Logging entries Vertex writes for it.

Vertex sends what each replica's container writes to Cloud Logging, one entry per line, as
entries of the monitored resource ``ml_job`` ("These resources upon execution generate logs
entries with resource.type "ml_job"": Google Cloud Community, "Aggregate Vertex AI model
training logs in a BigQuery Table", 2022); the shape below is read from gcloud's code and from
entries users have quoted:

- ``resource``: ``{"type": "ml_job", "labels": {"job_id", "project_id", "task_name"}}``
  (the monitored resource gcloud's ``ai custom-jobs stream-logs`` filters on:
  ``resource.type="ml_job" resource.labels.job_id="ID"`` and
  ``resource.labels.task_name``, google-cloud-sdk ``command_lib/ai/log_util.py``);
- ``jsonPayload``: ``{"message": LINE, "levelname": "INFO" | "ERROR", "attrs": {"tag":
  "workerpool0-0"}}`` and ``severity`` INFO for standard output, ERROR for standard error
  (entries of Vertex training jobs as users quote them: github.com/viamrobotics/api
  pull 534; googleapis/python-aiplatform issue 629, where a JSON line stays a string in
  ``message``; GoogleCloudPlatform/vertex-ai-samples issue 242, progress bars on stderr
  shown as ERROR);
- ``logName``: ``projects/PROJECT/logs/<task name>`` (the emulator's reading: the task's name,
  as ``attrs.tag`` has it);
- a trial of a HyperparameterTuningJob: the tuning job's id, and the entry label
  ``ml.googleapis.com/trial_id`` (gcloud's ml-engine ``log_utils`` reads it there);
- the service's own messages (the emulator's ``job.log``): ``task_name`` ``service``,
  severity INFO.

The lines come from the replicas' entry files (``JobFiles.replica_entries``, written by the
replica guard as it reads each line) and the job's ``job.log``. Timestamps are written with
six fraction digits and ``Z``, so their text sorts as their time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trainpool.home import JobFiles

RESOURCE_TYPE = "ml_job"
SERVICE_TASK = "service"
TRIAL_LABEL = "ml.googleapis.com/trial_id"
SEVERITY = {"o": "INFO", "e": "ERROR"}


def stamp(text: str) -> str:
    """``2026-11-26T14:57:02.307+00:00`` or ``...307558Z`` -> ``2026-11-26T14:57:02.307000Z``."""
    text = text.strip().replace("+00:00", "Z")
    if not text.endswith("Z"):
        return text
    head, dot, fraction = text[:-1].partition(".")
    return f"{head}.{(fraction if dot else '').ljust(6, '0')[:6]}Z"


def _entry(
    project: str,
    job_id: str,
    task: str,
    when: str,
    severity: str,
    message: str,
    insert_id: str,
    trial: str | None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "logName": f"projects/{project}/logs/{task}",
        "resource": {
            "type": RESOURCE_TYPE,
            "labels": {"job_id": job_id, "project_id": project, "task_name": task},
        },
        "timestamp": when,
        "receiveTimestamp": when,
        "severity": severity,
        "insertId": insert_id,
        "jsonPayload": {"message": message, "levelname": severity, "attrs": {"tag": task}},
    }
    if trial is not None:
        entry["labels"] = {TRIAL_LABEL: trial}
    return entry


def _service(files: JobFiles, project: str, job_id: str, trial: str | None) -> Iterator[dict]:
    try:
        text = files.log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    offset = 0
    for line in text.splitlines(keepends=True):
        when, _, message = line.rstrip("\n").partition(" ")
        yield _entry(
            project,
            job_id,
            SERVICE_TASK,
            stamp(when),
            "INFO",
            message,
            f"{trial or '0'}-{SERVICE_TASK}-{offset:012x}",
            trial,
        )
        offset += len(line.encode())


def _replicas(files: JobFiles, project: str, job_id: str, trial: str | None) -> Iterator[dict]:
    for path in sorted((files.dir / "entries").glob("*.jsonl")):
        task = path.stem
        offset = 0
        try:
            handle = path.open("rb")
        except OSError:
            continue
        with handle:
            for raw in handle:
                start, offset = offset, offset + len(raw)
                if not raw.endswith(b"\n"):
                    break  # being written: the next read has it whole
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                yield _entry(
                    project,
                    job_id,
                    task,
                    stamp(str(line.get("t", ""))),
                    SEVERITY.get(str(line.get("s")), "DEFAULT"),
                    str(line.get("m", "")),
                    f"{trial or '0'}-{task}-{start:012x}",
                    trial,
                )


def trial_ids(files: JobFiles) -> list[str]:
    found = [p.name.split("-", 1)[1] for p in files.dir.glob("trial-*") if p.is_dir()]
    return sorted(found, key=lambda t: (len(t), t))


def job_entries(files: JobFiles, project: str, job_id: str, sweep: bool) -> Iterator[dict]:
    """Every entry of one job: its service messages and its replicas' lines; for a sweep,
    each trial's too, labelled with its trial id."""
    yield from _service(files, project, job_id, None)
    yield from _replicas(files, project, job_id, None)
    if sweep:
        for trial in trial_ids(files):
            yield from _service(files.trial(trial), project, job_id, trial)
            yield from _replicas(files.trial(trial), project, job_id, trial)


def log_names(files: JobFiles) -> set[str]:
    """The tasks of a job that wrote something (what ``ListLogs`` names)."""
    tasks = {p.stem for p in (files.dir / "entries").glob("*.jsonl")}
    tasks |= {p.stem for p in files.dir.glob("trial-*/entries/*.jsonl")}
    if files.log.exists():
        tasks.add(SERVICE_TASK)
    return tasks


def _exists(path: Path) -> bool:
    return path.exists()
