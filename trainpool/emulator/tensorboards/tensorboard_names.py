"""The resource names of Vertex AI TensorBoard (Tensorboards, experiments, runs, time
series), checked before a TensorboardService method reads or writes them."""

from __future__ import annotations

import re

from trainpool.emulator.api import requests
from trainpool.emulator.records.kinds import (
    TENSORBOARD_EXPERIMENTS,
    TENSORBOARD_RUNS,
    TENSORBOARD_TIME_SERIES,
    TENSORBOARDS,
    Kind,
)
from trainpool.errors import InputError, brief

_PATHS = {
    TENSORBOARDS.collection: r"projects/[^/]+/locations/[^/]+/tensorboards/[^/]+",
    TENSORBOARD_EXPERIMENTS.collection: r"projects/[^/]+/locations/[^/]+/tensorboards/[^/]+"
    r"/experiments/[^/]+",
    TENSORBOARD_RUNS.collection: r"projects/[^/]+/locations/[^/]+/tensorboards/[^/]+"
    r"/experiments/[^/]+/runs/[^/]+",
    TENSORBOARD_TIME_SERIES.collection: r"projects/[^/]+/locations/[^/]+/tensorboards/[^/]+"
    r"/experiments/[^/]+/runs/[^/]+/timeSeries/[^/]+",
}


def check_name(name: str, kind: Kind, field: str = "name") -> None:
    """INVALID_ARGUMENT unless ``name`` is a resource name of ``kind``."""
    if not re.fullmatch(_PATHS[kind.collection], name or ""):
        shape = _PATHS[kind.collection].replace("[^/]+", "ID").replace("\\", "")
        raise InputError.of(field, f"{brief(name)} is not a {kind.label} name; accepted: {shape}")
    requests.check_parent("/".join(name.split("/")[:4]), field)
