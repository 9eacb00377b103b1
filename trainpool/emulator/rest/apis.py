"""The Google APIs the REST door serves, by host, and where their HTTP rules come from.

An API is named by its host's first label (``aiplatform`` for ``aiplatform.googleapis.com``
and the regional ``us-central1-aiplatform.googleapis.com``, as gcloud's endpoint overrides
name it). Each is served from the generated Python clients of its packages
(:func:`trainpool.emulator.rest.routes.package_routes`) plus routes given as data where a
client has no REST transport.
"""

from __future__ import annotations

from trainpool.emulator.rest.routes import Route
from trainpool.emulator.rest.template import parse

LOGGING_ROUTES = tuple(
    Route(verb, parse(uri), "google.logging.v2.LoggingServiceV2", method, body)
    for verb, uri, method, body in (
        ("POST", "/v2/entries:write", "WriteLogEntries", "*"),
        ("POST", "/v2/entries:list", "ListLogEntries", "*"),
        ("POST", "/v2/entries:tail", "TailLogEntries", "*"),
        ("GET", "/v2/monitoredResourceDescriptors", "ListMonitoredResourceDescriptors", ""),
        ("GET", "/v2/{parent=projects/*}/logs", "ListLogs", ""),
        ("GET", "/v2/{parent=projects/*/locations/*/buckets/*/views/*}/logs", "ListLogs", ""),
        ("DELETE", "/v2/{log_name=projects/*/logs/*}", "DeleteLog", ""),
    )
)
"""google/logging/v2/logging.proto's ``google.api.http`` rules for the Logging methods the
emulator serves (its Python client has no REST transport to read them from)."""

SERVED_APIS: dict[str, tuple[tuple[str, ...], tuple[Route, ...]]] = {
    "aiplatform": (("google.cloud.aiplatform_v1", "google.cloud.aiplatform_v1beta1"), ()),
    "cloudbuild": (("google.cloud.devtools.cloudbuild_v1",), ()),
    "cloudresourcemanager": (("google.cloud.resourcemanager_v3",), ()),
    "serviceusage": (("google.cloud.service_usage_v1",), ()),
    "artifactregistry": (("google.cloud.artifactregistry_v1",), ()),
    "logging": (("google.cloud.logging_v2",), LOGGING_ROUTES),
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
