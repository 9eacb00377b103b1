"""Rules of one pool: replica count, disk, and what it runs (container or Python package)."""

from __future__ import annotations

from typing import Any

from trainpool.catalog import closest_prebuilt, is_google_training_image, prebuilt_image
from trainpool.cluster_env.layout import is_reduction_server
from trainpool.plan.findings import Findings, is_whole, show
from trainpool.plan.machine_rules import check_machine
from trainpool.plan.naming import Namer
from trainpool.plan.text_rules import (
    MAX_ENV,
    MAX_PACKAGE_URIS,
    env_name_problem,
    gcs_uri_problem,
)

BOOT_DISK_TYPES = ("pd-ssd", "pd-standard", "hyperdisk-balanced")
BOOT_DISK_GB = (100, 64000)
MAX_REPLICA_COUNT = 1000
"""trainpool's bound on one pool's replicas, not Vertex's: Vertex publishes no maximum for
``replicaCount`` (an int64); its per-region CPU and GPU quotas bound a job in practice. A
count above this is a typo (``1e30``) far more often than a plan, and the emulator would try
to start that many processes."""


def check_pool(
    index: int,
    pool: dict[str, Any],
    names: Namer,
    found: Findings,
    *,
    launch: bool,
    allow_unknown: bool = False,
) -> None:
    """Every rule of one non-empty pool; ``launch=False`` while planning (image comes later)."""
    reducer = index == 2 and is_reduction_server(pool)
    _check_replicas(index, pool.get("replicaCount"), names, found, launch=launch, reducer=reducer)
    check_machine(
        index, pool.get("machineSpec"), names, found, cpu_only=reducer, allow_unknown=allow_unknown
    )
    _check_disk(index, pool.get("diskSpec") or {}, names, found)
    if not reducer:
        _check_runtime(index, pool, names, found, launch=launch)


def _check_replicas(
    index: int, count: Any, names: Namer, found: Findings, *, launch: bool, reducer: bool
) -> None:
    where = names.pool(index, "replicaCount")
    if count is None:
        if not (reducer and not launch):
            found.error(where, "missing; accepted: a whole number >= 1")
        return
    if not is_whole(count) or count < 1 or count > MAX_REPLICA_COUNT:
        found.error(
            where,
            f"{show(count)} is not accepted; accepted: a whole number from 1 to "
            f"{MAX_REPLICA_COUNT} (trainpool's bound; Vertex publishes none)",
        )
    elif index == 0 and count != 1:
        found.error(
            where,
            f"{count} is not accepted; accepted: 1 (the primary is one replica; "
            "put more replicas in workers)",
        )


def _check_disk(index: int, disk: dict[str, Any], names: Namer, found: Findings) -> None:
    kind = disk.get("bootDiskType")
    if kind is not None and kind not in BOOT_DISK_TYPES:
        found.error(
            names.pool(index, "diskSpec.bootDiskType"),
            f"{show(kind)} is not accepted; accepted: {', '.join(BOOT_DISK_TYPES)}",
        )
    size = disk.get("bootDiskSizeGb")
    low, high = BOOT_DISK_GB
    if size is not None and (not is_whole(size) or not low <= size <= high):
        found.error(
            names.pool(index, "diskSpec.bootDiskSizeGb"),
            f"{show(size)} is not accepted; accepted: a whole number of GB from {low} to {high}",
        )


def _check_runtime(
    index: int, pool: dict[str, Any], names: Namer, found: Findings, *, launch: bool
) -> None:
    container = pool.get("containerSpec")
    package = pool.get("pythonPackageSpec")
    if container and package:
        if set(container) == {"command"}:
            found.error(
                names.pool(index, "containerSpec.command"),
                f"{show(container['command'])} is not used with a Python package, which runs "
                "`python -m MODULE`; accepted: args and env, or a container image instead",
            )
        else:
            found.error(
                names.pool(index, "pythonPackageSpec"),
                "given together with a container; accepted: a container image or a Python "
                "package, not both",
            )
        return
    if package:
        for key in ("executorImageUri", "pythonModule"):
            if not isinstance(package.get(key), str) or not package.get(key):
                found.error(
                    names.pool(index, f"pythonPackageSpec.{key}"),
                    f"{show(package.get(key))} is not accepted; accepted: a non-empty string",
                )
        _check_package_uris(index, package.get("packageUris"), names, found)
        _check_env(index, package.get("env"), "pythonPackageSpec.env", names, found)
        _check_prebuilt(index, package.get("executorImageUri"), "pythonPackageSpec", names, found)
        return
    image = (container or {}).get("imageUri")
    _check_prebuilt(index, image, "containerSpec", names, found)
    if not image:
        message = (
            "no container image; accepted: an image URI or a Python package "
            "(a planned pool without one gets the pipeline's built image at launch)"
        )
        if launch:
            found.error(names.pool(index, "containerSpec.imageUri"), message)
        else:
            found.warn(names.pool(index, "containerSpec.imageUri"), message)
    _check_env(index, (container or {}).get("env"), "containerSpec.env", names, found)


def _check_package_uris(index: int, uris: Any, names: Namer, found: Findings) -> None:
    where = names.pool(index, "pythonPackageSpec.packageUris")
    if not isinstance(uris, list) or not uris or len(uris) > MAX_PACKAGE_URIS:
        shown = f"{len(uris)} URIs" if isinstance(uris, list) and uris else show(uris)
        found.error(
            where,
            f"{shown} is not accepted; accepted: a list of 1 to {MAX_PACKAGE_URIS} "
            "gs:// package URIs",
        )
        return
    for n, uri in enumerate(uris):
        if isinstance(uri, str) and uri and not uri.startswith("gs://"):
            continue  # a local path: the emulator's convenience (jobs/packages.py)
        problem = gcs_uri_problem(uri, f"{where}[{n}]")
        if problem is not None:
            field, _, message = problem.partition(": ")
            found.error(field, message)


PREBUILT_PAGE = "https://cloud.google.com/vertex-ai/docs/training/pre-built-containers"


def _check_prebuilt(index: int, uri: Any, spec: str, names: Namer, found: Findings) -> None:
    """An image of Vertex's own training repositories must be one of its prebuilt training
    images, with the ``latest`` tag (the page: "You must use an image with the latest tag";
    ``PythonPackageSpec.executor_image_uri``: "You must use an image from this list")."""
    if not isinstance(uri, str) or not is_google_training_image(uri) or prebuilt_image(uri):
        return
    field = "executorImageUri" if spec == "pythonPackageSpec" else "imageUri"
    found.error(
        names.pool(index, f"{spec}.{field}"),
        f"{show(uri)} is not one of Vertex's prebuilt training images; accepted: an image of "
        f"{PREBUILT_PAGE} with the latest tag, closest first: {', '.join(closest_prebuilt(uri))}",
    )


def _check_env(index: int, env: Any, field: str, names: Namer, found: Findings) -> None:
    where = names.pool(index, field)
    if env is None:
        return
    if not isinstance(env, list) or len(env) > MAX_ENV:
        shown = f"{len(env)} variables" if isinstance(env, list) else show(env)
        found.error(
            where, f"{shown} is not accepted; accepted: at most {MAX_ENV} {{name, value}} entries"
        )
        return
    for entry in env:
        if not isinstance(entry, dict) or not entry.get("name"):
            found.error(
                where, f"{show(entry)} is not accepted; accepted: {{name: NAME, value: VALUE}}"
            )
            continue
        problem = env_name_problem(entry["name"])
        if problem is not None:
            found.error(where, problem)
