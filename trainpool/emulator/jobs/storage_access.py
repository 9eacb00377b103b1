"""Cloud Storage inside a replica as on Vertex: client libraries and gcloud with no code change.

A Vertex replica reaches Cloud Storage three ways: ``/gcs/`` (Cloud Storage FUSE,
:mod:`.gcs_mount`), the client libraries and the Cloud SDK, both authenticated by the
replica's service account from the metadata server and given the project
(``CustomJobSpec.service_account`` in ``aiplatform_v1/types/custom_job.py``; gcloud reads
``metadata.google.internal``, ``core/credentials/gce_read.py`` of the Cloud SDK; Google's
XGBoost sample, ``notebooks/official/training/hyperparameter_tuning_xgboost.ipynb`` in
vertex-ai-samples, reads its data with ``gcloud storage cp``). Locally the emulator's Cloud
Storage JSON API door (``trainpool.emulator.cloud_storage``) stands in for the service, and
each replica is pointed at it the ways each client documents:

- the door's own variables (``EmulatorState.storage_env``): ``STORAGE_EMULATOR_HOST`` (the
  door's URL with its secret: google-cloud-storage then talks to it with anonymous
  credentials, googleapis/python-storage ``Client``, so no ``DefaultCredentialsError``),
  ``CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE`` (``gcloud storage`` uses that endpoint, "gcloud
  topic endpoint-override") and ``CLOUDSDK_AUTH_ACCESS_TOKEN_FILE`` (gcloud sends the door's
  secret as its access token, which the door accepts);
- ``CLOUDSDK_CORE_PROJECT``: the job's project, which gcloud on Vertex reads from the
  metadata server; ``CLOUDSDK_CONFIG``: a gcloud configuration of the replica's own (in
  its fresh HOME, as a container's is its own); ``CLOUDSDK_CORE_CHECK_GCE_METADATA=false``
  and ``CLOUDSDK_CORE_DISABLE_PROMPTS=1``: no metadata-server probe (there is none
  locally) and no prompt (a replica has no terminal).

``GOOGLE_CLOUD_PROJECT`` is not set: no Google source says Vertex sets it (the notes found
none); Vertex sets ``CLOUD_ML_PROJECT_ID`` (``trainpool.cluster_env.env``), and client
libraries given ``STORAGE_EMULATOR_HOST`` need no project to read and write objects.

``gsutil`` is not pointed at the door: it speaks only HTTPS to a JSON API host it is
given (gsutil ``gslib/gcs_json_api.py``) and ignores ``STORAGE_EMULATOR_HOST``
(GoogleCloudPlatform/gsutil#1740); the door is plain HTTP. It reaches the door through the
emulator's HTTPS proxy at ``storage.googleapis.com``, as under ``trainpool exec``
(:func:`.vertex_access.https_env`, which also moves ``CLOUDSDK_CONFIG`` to a configuration of
the replica's own pointed at the emulator, kept outside its HOME).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

NO_DOOR_NOTE = (
    "the emulator serves no Cloud Storage JSON API (start it with storage): in replicas "
    "gs:// clients (google-cloud-storage, gcloud storage, gsutil) will not work; only /gcs "
    "does"
)


def storage_env(door: Mapping[str, str], project: str, home: Path) -> dict[str, str]:
    """The variables that point a replica's Cloud Storage clients at the door (``door``: the
    emulator's ``storage_env()``); ``home`` is the replica's HOME. Empty without a door."""
    if not door:
        return {}
    return {
        **door,
        "CLOUDSDK_CORE_PROJECT": project,
        "CLOUDSDK_CONFIG": str(home / ".config" / "gcloud"),
        "CLOUDSDK_CORE_CHECK_GCE_METADATA": "false",
        "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
    }
