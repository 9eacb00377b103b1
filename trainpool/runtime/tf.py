"""TensorFlow glue: the chief/non-chief save rule of MultiWorkerMirroredStrategy.

Every worker must save (saving runs collective ops), but only the chief may write to
the real destination; the others write to their own temporary directories, which
are removed afterwards. tensorflow is imported only when called.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from trainpool.runtime.gcs import local_path


def is_chief(task_type: str | None, task_id: int | None, has_chief: bool = True) -> bool:
    """True for ``chief`` or ``master``; without a chief task, worker 0 (or no task) is chief."""
    if task_type in ("chief", "master"):
        return True
    if not has_chief:
        return task_type is None or (task_type == "worker" and task_id == 0)
    return False


def write_path(
    filepath: str, task_type: str | None, task_id: int | None, has_chief: bool = True
) -> str:
    """``filepath`` for the chief; ``<dir>/workertemp_<task_type>_<task_id>/<name>`` otherwise."""
    if is_chief(task_type, task_id, has_chief):
        return filepath
    trailing = os.sep if filepath.endswith(os.sep) else ""
    dirpath, base = os.path.split(filepath.rstrip(os.sep))
    temp_dir = os.path.join(dirpath, f"workertemp_{task_type}_{task_id}")
    os.makedirs(temp_dir, exist_ok=True)
    return os.path.join(temp_dir, base) + trailing


def strategy_task(strategy: Any) -> tuple[str | None, int | None, bool]:
    """``(task_type, task_id, has_chief)`` of a MultiWorkerMirroredStrategy's cluster."""
    resolver = strategy.cluster_resolver
    spec = resolver.cluster_spec().as_dict() if resolver.cluster_spec() else {}
    return resolver.task_type, resolver.task_id, bool({"chief", "master"} & set(spec))


def save_model(model: Any, destination: str, strategy: Any) -> str:
    """Save a Keras ``model`` by the chief/non-chief rule; returns the path this task wrote.

    ``destination`` may be ``gs://``: it is resolved with ``runtime.gcs.local_path``.
    """
    task_type, task_id, has_chief = strategy_task(strategy)
    target = local_path(destination)
    path = write_path(target, task_type, task_id, has_chief)
    os.makedirs(os.path.dirname(path.rstrip(os.sep)) or ".", exist_ok=True)
    model.save(path)
    if path != target:
        shutil.rmtree(os.path.dirname(path.rstrip(os.sep)), ignore_errors=True)
    return path
