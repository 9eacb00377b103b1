"""Job labels: the pipeline run's labels, the user's, and the task label.

Vertex Pipelines exports the run's labels to each task as the JSON object
``VERTEX_AI_PIPELINES_RUN_LABELS``; GCPC merges them into the job's labels and so
do we (the user's keys win). The task label names the pipeline task that owns
the job, so a launcher that crashed between create and writing gcp_resources
finds its job again instead of creating a second one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

from trainpool.plan.label_rules import MAX_LABELS, check_labels

RUN_LABELS_ENV = "VERTEX_AI_PIPELINES_RUN_LABELS"
TASK_LABEL = "trainpool-task"
ATTEMPT_LABEL = "trainpool-attempt"
"""1 for a task's first job, then one more for each job a retry of the task creates."""
_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
__all__ = ["MAX_LABELS", "check", "job_labels", "task_label_value"]


def task_label_value(task_id: str) -> str:
    """``task_id`` as a valid label value (lowercased; hashed when it does not fit)."""
    value = task_id.strip().lower()
    if _VALUE.match(value) and value:
        return value
    return "h-" + hashlib.sha256(task_id.encode()).hexdigest()[:40]


def check(labels: dict[str, str], field: str = "labels") -> None:
    """InputError (a ValueError) naming the keys and values Vertex would refuse
    (:mod:`trainpool.plan.label_rules`, the one statement of the rule)."""
    check_labels(labels, field)


def job_labels(user: dict[str, str], task_id: str) -> dict[str, str]:
    """Run labels, then the user's (which win), then the task label."""
    raw = os.environ.get(RUN_LABELS_ENV, "").strip()
    run: dict[str, str] = {}
    if raw:
        try:
            run = json.loads(raw)
        except json.JSONDecodeError as err:
            raise ValueError(f"{RUN_LABELS_ENV}={raw!r}: {err}; accepted: a JSON object") from err
        if not isinstance(run, dict):
            raise ValueError(f"{RUN_LABELS_ENV}={raw!r}; accepted: a JSON object")
    check(dict(user))
    merged = {**run, **user}
    if task_id:
        merged[TASK_LABEL] = task_label_value(task_id)
    check(merged)
    return merged
