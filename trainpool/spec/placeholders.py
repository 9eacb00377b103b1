"""Values Vertex AI Pipelines fills in at run time, as Google's own components use them.

``{{$.pipeline_google_cloud_project_id}}`` and ``{{$.pipeline_google_cloud_location}}``
are the project and region of the pipeline run (google_cloud_pipeline_components
``_placeholders.py``). GCPC's own pipelines take them as whole-value parameter defaults
(e.g. ``v1/model_evaluation/evaluation_feature_attribution_pipeline.py``:
``project: str = _placeholders.PROJECT_ID_PLACEHOLDER``), and so do trainpool's. kfp.local
does not know them (its resolver fails on them), so ``trainpool run --local`` and the
emulator's PipelineService substitute them with :func:`resolve` before a local run.
"""

from __future__ import annotations

PROJECT_ID = "{{$.pipeline_google_cloud_project_id}}"
LOCATION = "{{$.pipeline_google_cloud_location}}"


def resolve(text: str, project: str, location: str) -> str:
    """``text`` (a compiled pipeline) with the run's project and location filled in."""
    return text.replace(PROJECT_ID, project).replace(LOCATION, location)
