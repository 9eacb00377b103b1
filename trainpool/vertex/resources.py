"""The ``gcp_resources`` output, in GCPC's proto and JSON format.

Vertex Pipelines reads this file to link a task to its job in the console and
to cancel the job when the run is cancelled, so it must be GCPC's exact shape::

    {"resources": [{"resourceType": "CustomJob",
                    "resourceUri": "https://us-central1-aiplatform.googleapis.com/v1/projects/..."}]}

A launcher that finds the file already written (a retried task) re-attaches to
the job named there instead of creating another.
"""

from __future__ import annotations

from pathlib import Path

from google.protobuf import json_format
from google_cloud_pipeline_components.proto.gcp_resources_pb2 import GcpResources

from trainpool.vertex.clients import api_endpoint


def resource_uri(job_name: str, location: str) -> str:
    """The resource URI GCPC writes for ``job_name``: the regional REST URL of the job."""
    return f"https://{api_endpoint(location)}/v1/{job_name}"


def write(path: str | Path, resource_type: str, job_name: str, location: str) -> None:
    """Write ``gcp_resources`` naming one job of ``resource_type`` (e.g. ``CustomJob``)."""
    resources = GcpResources()
    resource = resources.resources.add()
    resource.resource_type = resource_type
    resource.resource_uri = resource_uri(job_name, location)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json_format.MessageToJson(resources))
    partial.replace(target)


def read(path: str | Path, resource_type: str) -> str | None:
    """The job name in an existing ``gcp_resources`` file, or None when there is none yet."""
    source = Path(path)
    if not source.exists() or source.stat().st_size == 0:
        return None
    resources = json_format.Parse(source.read_text(), GcpResources())
    if len(resources.resources) != 1:
        raise ValueError(
            f"gcp_resources {source}: {len(resources.resources)} resources; accepted: exactly one"
        )
    resource = resources.resources[0]
    if resource.resource_type != resource_type:
        raise ValueError(
            f"gcp_resources {source}: resourceType {resource.resource_type!r}; "
            f"accepted: {resource_type!r}"
        )
    _, sep, name = resource.resource_uri.partition("/v1/")
    if not sep or not name.startswith("projects/"):
        raise ValueError(
            f"gcp_resources {source}: resourceUri {resource.resource_uri!r}; "
            "accepted: https://HOST/v1/projects/P/locations/L/..."
        )
    return name
