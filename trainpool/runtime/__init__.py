"""What a trainer imports inside its container: the parsed replica view and small helpers.

Standard library only; torch and tensorflow are imported inside the functions of
``trainpool.runtime.torch`` and ``trainpool.runtime.tf`` that need them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from trainpool.cluster_env import ReplicaContext, parse_env


def context(environ: Mapping[str, str] | None = None) -> ReplicaContext:
    """This replica's view of its job (``os.environ`` unless ``environ`` is given)."""
    return parse_env(os.environ if environ is None else environ)


__all__ = ["ReplicaContext", "context"]
