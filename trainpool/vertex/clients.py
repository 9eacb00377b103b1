"""The one client factory: Vertex's regional endpoint, or the emulator.

When ``VERTEX_AI_EMULATOR_HOST=host:port`` is set (named after Google's own
``PUBSUB_EMULATOR_HOST``), every client talks to that address over an insecure
loopback channel with anonymous credentials. Otherwise it talks to
``{location}-aiplatform.googleapis.com`` with Application Default Credentials.
"""

from __future__ import annotations

from typing import Any

from trainpool.config import emulator_host


def api_endpoint(location: str) -> str:
    """The regional Vertex AI endpoint for ``location`` (``global`` has no prefix)."""
    if location == "global":
        return "aiplatform.googleapis.com"
    return f"{location}-aiplatform.googleapis.com"


def console_url(resource_name: str) -> str:
    """The Google Cloud console page of a CustomJob, HyperparameterTuningJob or PipelineJob."""
    parts = resource_name.split("/")
    fields = dict(zip(parts[::2], parts[1::2], strict=False))
    project, location = fields.get("projects", ""), fields.get("locations", "")
    kinds = {
        "customJobs": "training/custom-jobs",
        "hyperparameterTuningJobs": "training/hyperparameter-tuning-jobs",
        "pipelineJobs": "pipelines/runs",
    }
    for kind, page in kinds.items():
        if kind in fields:
            return (
                f"https://console.cloud.google.com/vertex-ai/locations/{location}/"
                f"{page}/{fields[kind]}?project={project}"
            )
    return f"https://console.cloud.google.com/vertex-ai?project={project}"


def _make(client_cls: Any, transport_cls: Any, location: str) -> Any:
    host = emulator_host()
    if host is None:
        from google.api_core.client_options import ClientOptions

        return client_cls(client_options=ClientOptions(api_endpoint=api_endpoint(location)))
    import grpc

    channel = grpc.insecure_channel(host)
    return client_cls(transport=transport_cls(host=host, channel=channel))


def job_client(location: str) -> Any:
    """A ``JobServiceClient`` for ``location`` (or the emulator)."""
    from google.cloud.aiplatform_v1 import JobServiceClient
    from google.cloud.aiplatform_v1.services.job_service.transports import (
        JobServiceGrpcTransport,
    )

    return _make(JobServiceClient, JobServiceGrpcTransport, location)


def pipeline_client(location: str) -> Any:
    """A ``PipelineServiceClient`` for ``location`` (or the emulator)."""
    from google.cloud.aiplatform_v1 import PipelineServiceClient
    from google.cloud.aiplatform_v1.services.pipeline_service.transports import (
        PipelineServiceGrpcTransport,
    )

    return _make(PipelineServiceClient, PipelineServiceGrpcTransport, location)


def model_client(location: str) -> Any:
    """A ``ModelServiceClient`` for ``location`` (or the emulator)."""
    from google.cloud.aiplatform_v1 import ModelServiceClient
    from google.cloud.aiplatform_v1.services.model_service.transports import (
        ModelServiceGrpcTransport,
    )

    return _make(ModelServiceClient, ModelServiceGrpcTransport, location)


def schedule_client(location: str) -> Any:
    """A ``ScheduleServiceClient`` for ``location`` (or the emulator)."""
    from google.cloud.aiplatform_v1 import ScheduleServiceClient
    from google.cloud.aiplatform_v1.services.schedule_service.transports import (
        ScheduleServiceGrpcTransport,
    )

    return _make(ScheduleServiceClient, ScheduleServiceGrpcTransport, location)


def vizier_client(location: str) -> Any:
    """A ``VizierServiceClient`` for ``location`` (or the emulator)."""
    from google.cloud.aiplatform_v1 import VizierServiceClient
    from google.cloud.aiplatform_v1.services.vizier_service.transports import (
        VizierServiceGrpcTransport,
    )

    return _make(VizierServiceClient, VizierServiceGrpcTransport, location)


def tensorboard_client(location: str) -> Any:
    """A ``TensorboardServiceClient`` for ``location`` (or the emulator)."""
    from google.cloud.aiplatform_v1 import TensorboardServiceClient
    from google.cloud.aiplatform_v1.services.tensorboard_service.transports import (
        TensorboardServiceGrpcTransport,
    )

    return _make(TensorboardServiceClient, TensorboardServiceGrpcTransport, location)


def metadata_client(location: str) -> Any:
    """A ``MetadataServiceClient`` for ``location`` (or the emulator)."""
    from google.cloud.aiplatform_v1 import MetadataServiceClient
    from google.cloud.aiplatform_v1.services.metadata_service.transports import (
        MetadataServiceGrpcTransport,
    )

    return _make(MetadataServiceClient, MetadataServiceGrpcTransport, location)
