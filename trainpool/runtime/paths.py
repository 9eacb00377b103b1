"""Trial-aware, replica-aware output paths: no two trials and no two replicas share one.

The chief writes to the job's directory (``AIP_MODEL_DIR`` and friends, which already
hold ``<trial id>/`` in a sweep). Every other replica writes to its own temporary
sibling, as in the MultiWorkerMirroredStrategy guide: ``.../workertemp_<replica>/model/``.
"""

from __future__ import annotations

import posixpath

from trainpool.cluster_env import ReplicaContext

KINDS = {"model": "model_dir", "checkpoints": "checkpoint_dir", "logs": "tensorboard_log_dir"}


def job_dir(kind: str, ctx: ReplicaContext, default_base: str | None = None) -> str:
    """The job's ``kind`` directory (model, checkpoints or logs), ending in ``/``.

    From ``AIP_*`` when Vertex set it; else ``<default_base>/[<trial id>/]<kind>/``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind: {kind!r}; accepted: one of {sorted(KINDS)}")
    value = getattr(ctx, KINDS[kind])
    if value:
        return value if value.endswith("/") else value + "/"
    if default_base is None:
        raise ValueError(
            f"no output directory for {kind!r}: AIP_{KINDS[kind].upper()} is not set; "
            "accepted: set baseOutputDirectory on the job, or pass default_base"
        )
    parts = [default_base.rstrip("/")] + ([ctx.trial_id] if ctx.trial_id else []) + [kind]
    return "/".join(parts) + "/"


def replica_path(path: str, ctx: ReplicaContext) -> str:
    """``path`` for the chief; ``<parent>/workertemp_<replica name>/<name>`` for the others."""
    if ctx.is_chief:
        return path
    trailing = "/" if path.endswith("/") else ""
    parent, name = posixpath.split(path.rstrip("/"))
    return posixpath.join(parent, f"workertemp_{ctx.replica_name}", name) + trailing


def replica_dir(kind: str, ctx: ReplicaContext, default_base: str | None = None) -> str:
    """Where this replica writes ``kind`` output: the job's directory or its own temp one."""
    return replica_path(job_dir(kind, ctx, default_base), ctx)
