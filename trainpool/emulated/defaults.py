"""What a local run stands in for the Vertex run's own settings (never compiled into YAML)."""

DEFAULT_PROJECT = "local-project"
DEFAULT_LOCATION = "us-central1"
DEFAULT_PIPELINE_ROOT = "gs://local-pipeline-root/runs"
