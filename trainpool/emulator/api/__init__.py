"""What every service the emulator serves shares (``rpc``: the service table every door
calls and its errors; request checks, read masks, protobuf ranges, v1beta1, unserved
methods), and the services with no engine of their own (Service Usage, Resource
Manager, Operations). A service with an engine, or with records and rules in a
module of their own, lives in its home beside them: ``jobs.job_service`` (and the
emulator's own ``jobs.faults_service``, ``jobs.local_service``),
``pipeline_jobs.pipeline_service``, ``schedules.schedule_service`` (and
``schedules.clock_service``), ``metadata.metadata_service``,
``tensorboards.tensorboard_service``, ``persistent.persistent_resource_service``,
``sweeps.vizier_service``, ``cloud_logging.logging_service``, ``builds.cloud_build``,
``model_registry.model_service``, ``artifact_registry.artifact_registry``."""
