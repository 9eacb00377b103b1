"""What ``trainpool submit`` checks before it creates anything that bills.

Each check answers with field-named problems; nothing is created when any is found:
the pipeline root's bucket exists, every image the tasks run in exists where they will
pull it from, and the cluster request (with the run's flat knobs) plans. The parameters'
types are checked by ``emulated.params`` before this runs. Against the emulator the
checks go to it and to its store (the bucket through ``images.storage``: a storage
emulator when ``STORAGE_EMULATOR_HOST`` is set, else the local store).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainpool.images import registry, storage
from trainpool.plan import PlanError, plan_cluster
from trainpool.spec import apply_overrides, coerce_ints, placeholders

KNOBS = ("worker_count", "machine_type", "accelerator_type", "accelerator_count")


def task_images(spec: Mapping[str, Any]) -> list[str]:
    """Every image the pipeline's tasks run in."""
    executors = spec.get("deploymentSpec", {}).get("executors", {})
    return sorted({e["container"]["image"] for e in executors.values() if "container" in e})


def check_bucket(pipeline_root: str) -> list[str]:
    try:
        found = storage.bucket_exists(pipeline_root)
    except Exception as err:  # noqa: BLE001 (any client failure is the answer to report)
        return [f"--pipeline-root: {pipeline_root!r}: could not check its bucket: {err}"]
    if found:
        return []
    return [
        f"--pipeline-root: {pipeline_root!r}: the bucket does not exist; accepted: a bucket "
        "you created (trainpool does not create it)"
    ]


def check_images(spec: Mapping[str, Any], notes: list[str]) -> list[str]:
    problems = []
    for image in task_images(spec):
        if registry.on_emulator_store(image):
            note = registry.local_note(image)
            notes.extend([note] if note else [])
            continue
        why = registry.missing(image)
        if why is not None:
            problems.append(
                f"components image {image!r}: {why}; accepted: an image `trainpool publish` "
                "pushed (and the YAML compiled against it)"
            )
    return problems


def check_plan(values: Mapping[str, Any], defaults: Mapping[str, Any], location: str) -> list[str]:
    """The cluster request as the run will plan it (its flat knobs applied)."""
    merged = {**defaults, **values}
    if "cluster_request" not in merged:
        return []
    knobs = {name: merged[name] for name in KNOBS if name in merged}
    if "reduction_server" in merged:
        knobs["reduction_server"] = merged["reduction_server"]
    run_location = str(merged.get("location") or location)
    if run_location == placeholders.LOCATION:
        run_location = location
    try:
        request = apply_overrides(coerce_ints(dict(merged["cluster_request"])), **knobs)
        plan_cluster(request, location=run_location)
    except (PlanError, ValueError) as err:
        return [f"--param cluster_request: {line}" for line in str(err).splitlines()]
    return []


GATE_PARAMS = ("metric", "goal", "min_improvement", "alias", "on_worse")
"""The retraining gate's parameters, the pipeline's ``gate_<name>``."""


def check_gate(values: Mapping[str, Any], defaults: Mapping[str, Any]) -> list[str]:
    """The retraining gate's parameters (a hostile alias, an unknown goal), refused before
    the run trains rather than at its last task."""
    from trainpool.errors import InputError
    from trainpool.spec import gate

    merged = {**defaults, **values}
    if not all(f"gate_{name}" in merged for name in GATE_PARAMS):
        return []
    given = [merged[f"gate_{name}"] for name in GATE_PARAMS]
    if isinstance(given[2], int) and not isinstance(given[2], bool):
        given[2] = float(given[2])
    try:
        gate.check(*given)
    except InputError as err:
        return [f"--param gate_{problem.field}: {problem.message}" for problem in err.problems]
    return []


def preflight(
    spec: Mapping[str, Any],
    values: Mapping[str, Any],
    defaults: Mapping[str, Any],
    pipeline_root: str,
    location: str,
    notes: list[str] | None = None,
) -> list[str]:
    """Every problem that would fail the run after it was created (empty: go ahead); what
    is worth knowing but fails nothing is appended to ``notes``."""
    return [
        *check_bucket(pipeline_root),
        *check_images(spec, notes if notes is not None else []),
        *check_plan(values, defaults, location),
        *check_gate(values, defaults),
    ]
