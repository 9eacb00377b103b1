"""The Google APIs the REST door serves, by host, and where their HTTP rules come from.

An API is named by its host's first label (``aiplatform`` for ``aiplatform.googleapis.com``
and the regional ``us-central1-aiplatform.googleapis.com``, as gcloud's endpoint overrides
name it). Each is served from the generated Python clients of its packages
(:func:`trainpool.emulator.rest.routes.package_routes`) plus routes given as data where a
client has no REST transport.
"""

from __future__ import annotations

from trainpool.emulator.cloud_logging import logging_service
from trainpool.emulator.rest.routes import Route

SERVED_APIS: dict[str, tuple[tuple[str, ...], tuple[Route, ...]]] = {
    "aiplatform": (("google.cloud.aiplatform_v1", "google.cloud.aiplatform_v1beta1"), ()),
    "cloudbuild": (("google.cloud.devtools.cloudbuild_v1",), ()),
    "cloudresourcemanager": (("google.cloud.resourcemanager_v3",), ()),
    "serviceusage": (("google.cloud.service_usage_v1",), ()),
    "artifactregistry": (("google.cloud.artifactregistry_v1",), ()),
    "logging": (("google.cloud.logging_v2",), logging_service.REST_ROUTES),
}
"""API -> (generated client packages, routes given as data)."""
GOOGLE_SUFFIX = ".googleapis.com"


def api_of(host: str) -> str | None:
    """The API a Google host serves (``us-central1-aiplatform.googleapis.com`` ->
    ``aiplatform``), or None when ``host`` is not a Google API host."""
    host = host.lower()
    if not host.endswith(GOOGLE_SUFFIX):
        return None
    label = host[: -len(GOOGLE_SUFFIX)]
    if "." in label or not label:
        return None
    if label.endswith("-aiplatform") or label.endswith("-aiplatform-prediction"):
        return "aiplatform"
    return label
