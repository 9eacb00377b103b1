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

Every other client reaches the emulator as under ``trainpool exec`` (:func:`https_env`,
:func:`trainpool.redirect.environment` itself, when the emulator serves its REST door and
its HTTPS proxy): ``HTTPS_PROXY`` and the store's CA bundle (which trusts the proxy's
authority: given to replicas and ``trainpool exec``'s commands only, never installed on
the machine), gsutil's boto file and Application Default Credentials whose refresh token
is the doors' secret (already the replica's, above), a gcloud configuration whose every
API is pointed at the REST door, and ``TRAINPOOL_REST_URL``. So gsutil, gcloud (``ai``,
``storage``, ``logging``), curl to ``https://*.googleapis.com``, the SDK and the gapic
clients on ``api_transport="rest"``, google-cloud-storage and TensorFlow's file system
reach the emulator; a Google API it does not serve is refused at once, naming it, and
another Google host (the metadata server, ``*.google.com``) too (:mod:`trainpool.emulator.proxy`);
no request reaches Google and the secret never leaves the machine. Other hosts (a package
index) pass through the proxy, so ``pip install`` in a trainer works as before. The
configuration is the replica's own, outside its HOME so that a restart keeps it
(``<job>/gcloud/<replica>/``: ``CLOUDSDK_CONFIG``, ``BOTO_CONFIG``); the rest of the
replica's environment stays Vertex's. The job log says what is given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from trainpool.config import EMULATOR_ENV
from trainpool.emulator.jobs.job_context import JobContext
from trainpool.redirect import SITE, environment

NOTE = (
    "each replica reaches this emulator's Vertex AI API as a Vertex replica reaches Vertex "
    "with its service account: {env}={address} and Google's client hook ({site}) first on "
    "PYTHONPATH, so the aiplatform SDK and the gapic clients in the trainer talk to the "
    "emulator over gRPC"
)
PROXY_NOTE = (
    "each replica is given this emulator's HTTPS proxy ({proxy}) and the CA that trusts it "
    "(trusted by replicas and trainpool exec only), gcloud's configuration with every API "
    "pointed at the REST door ({rest}) and gsutil's: gsutil, gcloud, curl to Google's URLs, "
    "the SDK and the gapic clients on REST and google-cloud-storage reach the emulator; a "
    "Google API it does not serve is refused at once, naming it; nothing reaches Google"
)
NO_PROXY_NOTE = (
    "the emulator serves no REST door and HTTPS proxy: in replicas, clients that speak HTTPS "
    "to Google's URLs (gsutil, gcloud's other commands, curl, the SDK on REST) are not "
    "redirected"
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


def proxy_note(ctx: JobContext) -> str:
    """The job log's line on the HTTPS proxy replicas are given (or not)."""
    if ctx.rest_address and ctx.proxy_address:
        return PROXY_NOTE.format(proxy=ctx.proxy_address, rest=ctx.rest_address)
    return NO_PROXY_NOTE


def https_env(ctx: JobContext, name: str, env: Mapping[str, str]) -> dict[str, str]:
    """What ``trainpool exec`` gives a command (:func:`trainpool.redirect.environment`), as
    the variables to add to or change in replica ``name``'s environment ``env``, its own
    gcloud and gsutil configuration in ``<job>/gcloud/<replica>/`` (kept over restarts,
    unlike its HOME); {} unless the emulator serves its REST door and HTTPS proxy."""
    if not (ctx.vertex_address and ctx.rest_address and ctx.proxy_address):
        return {}
    given = environment(
        ctx.vertex_address,
        ctx.storage_env,
        base=env,
        rest_address=ctx.rest_address,
        home=ctx.home,
        proxy_address=ctx.proxy_address,
        config_dir=ctx.files.dir / "gcloud" / name,
    )
    return {k: v for k, v in given.items() if env.get(k) != v}
