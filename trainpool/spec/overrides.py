"""The flat pipeline knobs (worker count, machine, accelerator, Reduction Server) over a request."""

from __future__ import annotations

import copy
from typing import Any

from trainpool.spec.errors import Problem, SpecError

REDUCTION_SERVER_MODES = ("request", "on", "off")


def apply_overrides(
    request: dict[str, Any],
    *,
    worker_count: int = -1,
    machine_type: str = "",
    accelerator_type: str = "",
    accelerator_count: int = -1,
    reduction_server: str = "request",
) -> dict[str, Any]:
    """A copy of the request dict with the knobs applied; ``-1`` and ``""`` keep the request.

    ``worker_count`` sets ``workers.replica_count`` (0 removes the workers pool);
    machine and accelerator knobs apply to the primary and the workers;
    ``reduction_server`` is ``request`` (keep), ``on`` (add one, sized) or ``off`` (remove).
    """
    problems = []
    if reduction_server not in REDUCTION_SERVER_MODES:
        problems.append(
            Problem(
                "reduction_server",
                f"{reduction_server!r} is not accepted; "
                f"accepted: {', '.join(REDUCTION_SERVER_MODES)}",
            )
        )
    for name, value in (("worker_count", worker_count), ("accelerator_count", accelerator_count)):
        if value != int(value) or value < -1:
            problems.append(
                Problem(
                    name,
                    f"{value!r} is not accepted; accepted: -1 (keep the "
                    "request) or a whole number >= 0",
                )
            )
    if problems:
        raise SpecError(problems)
    out = copy.deepcopy(request)
    trained = [name for name in ("primary", "workers") if isinstance(out.get(name), dict)]
    if worker_count == 0:
        out.pop("workers", None)
        trained = [name for name in trained if name != "workers"]
    elif worker_count > 0:
        if not isinstance(out.get("workers"), dict):
            out["workers"] = {
                key: value
                for key, value in dict(out.get("primary") or {}).items()
                if key != "replica_count"
            }
            trained.append("workers")
        out["workers"]["replica_count"] = int(worker_count)
    for name in trained:
        if machine_type:
            out[name]["machine_type"] = machine_type
        if accelerator_type:
            out[name]["accelerator_type"] = accelerator_type
        if accelerator_count >= 0:
            if accelerator_count == 0:
                out[name].pop("accelerator_type", None)
                out[name].pop("accelerator_count", None)
            else:
                out[name]["accelerator_count"] = int(accelerator_count)
    if reduction_server == "off":
        out.pop("reduction_server", None)
    elif reduction_server == "on" and not isinstance(out.get("reduction_server"), dict):
        out["reduction_server"] = {}
    return out
