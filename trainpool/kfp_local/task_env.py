"""Where and with what environment a local pipeline task runs: as on Vertex, not as in your shell.

On Vertex AI Pipelines a task runs in its image: its working directory and environment
are the image's, plus what Vertex sets. Locally each task runs in a sandbox the run's
launcher gives it (:mod:`trainpool.kfp_local.launching`: its own working directory, never the
checkout, so a task that reads a path that exists only in your checkout fails here as it
would on Vertex; its own HOME and Python), with the variables this module decides: what a
replica starts from (``cluster_env.host``, the one rule for both: ``PATH``, which the
launcher starts with the task's own Python, a fresh ``HOME``, ``LANG``), its image's
declared ENV (when the image is in the local image store), and the variables that point
trainpool and Google's clients at the local emulator and store. Credentials,
``PYTHONPATH``, cloud settings and everything else in your shell stay out.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from trainpool import config
from trainpool.cluster_env.base_env import base_env
from trainpool.cluster_env.gcs import LOCAL_ROOT_ENV
from trainpool.images import image_store
from trainpool.redirect import asked_environment

LOCAL_SERVICE_VARIABLES = (
    config.EMULATOR_ENV,
    config.HOME_ENV,
    LOCAL_ROOT_ENV,
    "STORAGE_EMULATOR_HOST",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE",
    "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
    "VERTEX_AI_PIPELINES_RUN_LABELS",  # Vertex gives tasks the run's labels
)
"""What points trainpool's clients at the local emulator and store instead of Google Cloud."""


def image_environ(image_uri: str, root: Path) -> dict[str, str]:
    """The ENV the image declares, when it is in the local image store at ``root``."""
    found = image_store.lookup(image_uri, root) if image_uri else None
    return dict(found.env) if found is not None else {}


def task_environ(
    host: Mapping[str, str], image_env: Mapping[str, str], home: Path, project: str = ""
) -> dict[str, str]:
    """The environment of a local task: a replica's start, the image's ENV, local services,
    and Google's clients pointed at the emulator as ``trainpool exec`` points a command's
    (:func:`trainpool.redirect.asked_environment`: the site hook GCPC's launchers need, and
    with the emulator's REST door and HTTPS proxy, gsutil, gcloud, curl and REST clients
    too), gcloud's and gsutil's configuration the run's own (``home/.config/gcloud``)."""
    env = base_env(home, dict(image_env))
    env.update({name: host[name] for name in LOCAL_SERVICE_VARIABLES if host.get(name)})
    address = env.get(config.EMULATOR_ENV, "")
    if address:
        folder = Path(home) / ".config" / "gcloud"
        env = asked_environment(address, project=project, base=env, config_dir=folder)
    return env
