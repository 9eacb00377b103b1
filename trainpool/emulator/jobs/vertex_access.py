"""The Vertex AI API inside a replica, as a Vertex replica reaches Vertex.

On Vertex, a trainer that calls the Vertex AI SDK (logging to an experiment, reading another
job, as the SDK's own autologging does) reaches Vertex with the job's service account,
from the metadata server. Locally, each replica gets (:func:`vertex_env`):

- ``VERTEX_AI_EMULATOR_HOST``: this emulator's address (its owner-only socket, which a
  replica can reach: it runs as the emulator's owner);
- the site hook (``trainpool.redirect.SITE``, standard library only, so it loads in any
  Python a replica runs in: a local image's, a prebuilt stand-in's, the machine's clean
  one) first on ``PYTHONPATH``: Google's gRPC clients in the trainer (the aiplatform SDK,
  the gapic clients) open their ``*.googleapis.com`` channels to the emulator, and
  ``google.auth.default`` answers with a static token instead of looking for a metadata
  server. The gRPC door takes no secret (the socket is the owner's), so no new secret
  reaches the replica: the one it has already is the storage door's, by file
  (``CLOUDSDK_AUTH_ACCESS_TOKEN_FILE``, :mod:`.storage_access`), as before; the project is
  ``CLOUD_ML_PROJECT_ID`` (or gcloud's), the location ``CLOUD_ML_REGION``, both Vertex's;
- what Vertex gives a job attached to an experiment or a Tensorboard: ``AIP_EXPERIMENT_NAME``
  and ``AIP_EXPERIMENT_RUN_NAME`` (the SDK's ``metadata/constants.py``: its experiment
  tracker reads them, so ``aiplatform.log_metrics`` in the trainer logs to the job's run),
  ``AIP_TENSORBOARD_RESOURCE_NAME`` and ``AIP_TENSORBOARD_API_URI``
  (``training_utils/environment_variables.py``).

REST clients in a trainer (``api_transport="rest"``) are not redirected: the HTTPS proxy
``trainpool exec`` uses would take every HTTPS request of the replica (its ``pip install``
too), so a replica is not given it; the job log says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from trainpool.config import EMULATOR_ENV
from trainpool.redirect import SITE

NOTE = (
    "each replica reaches this emulator's Vertex AI API as a Vertex replica reaches Vertex "
    "with its service account: {env}={address} and Google's client hook ({site}) first on "
    "PYTHONPATH, so the aiplatform SDK and the gapic clients in the trainer talk to the "
    "emulator over gRPC (not REST: no HTTPS proxy is given to replicas)"
)


def vertex_env(
    address: str, spec: dict[str, Any], region: str, env: Mapping[str, str]
) -> dict[str, str]:
    """The variables that point a replica's Vertex AI clients at the emulator at
    ``address`` (``spec``: the job's CustomJobSpec, REST JSON; ``env``: the replica's
    environment so far, whose ``PYTHONPATH`` is kept after the hook)."""
    if not address:
        return {}
    paths = [str(SITE), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    found = {EMULATOR_ENV: address, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}
    if spec.get("experiment"):
        found["AIP_EXPERIMENT_NAME"] = spec["experiment"]
    if spec.get("experimentRun"):
        found["AIP_EXPERIMENT_RUN_NAME"] = spec["experimentRun"]
    if spec.get("tensorboard"):
        found["AIP_TENSORBOARD_RESOURCE_NAME"] = spec["tensorboard"]
        found["AIP_TENSORBOARD_API_URI"] = f"{region}-aiplatform.googleapis.com"
    return found
