"""Register a trained model in the Vertex AI Model Registry (ModelService.UploadModel)."""

from __future__ import annotations

from typing import Any

from trainpool.vertex import clients
from trainpool.vertex.launch import require

CALL_TIMEOUT_S = 300.0


def upload(
    project: str,
    location: str,
    display_name: str,
    artifact_uri: str,
    serving_image: str,
    labels: dict[str, str] | None = None,
) -> Any:
    """Upload the model at ``artifact_uri`` (a model directory) served by ``serving_image``;
    wait for the operation and return the registered ``Model``."""
    require(
        project=project,
        location=location,
        display_name=display_name,
        artifact_uri=artifact_uri,
        serving_image=serving_image,
    )
    from google.cloud import aiplatform_v1

    client = clients.model_client(location)
    model = aiplatform_v1.Model(
        display_name=display_name,
        artifact_uri=artifact_uri,
        container_spec=aiplatform_v1.ModelContainerSpec(image_uri=serving_image),
        labels=labels or {},
    )
    operation = client.upload_model(
        parent=f"projects/{project}/locations/{location}", model=model, timeout=CALL_TIMEOUT_S
    )
    name = operation.result(timeout=CALL_TIMEOUT_S).model
    return client.get_model(name=name, timeout=CALL_TIMEOUT_S)
