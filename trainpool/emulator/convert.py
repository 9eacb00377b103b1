"""Proto ⇄ REST JSON for the specs the emulator reads."""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import study as study_types

from trainpool.spec import normalize_spec
from trainpool.spec.timing import duration_seconds


def job_spec_rest(job_spec: cj.CustomJobSpec) -> dict[str, Any]:
    """The CustomJobSpec as Vertex REST JSON: camelCase, enum names, ints, ``{}`` pools kept."""
    return normalize_spec(cj.CustomJobSpec.to_dict(job_spec))


def study_spec_rest(study_spec: study_types.StudySpec) -> dict[str, Any]:
    """The StudySpec as Vertex REST JSON: camelCase, enum names, no default values."""
    return study_types.StudySpec.to_dict(
        study_spec,
        preserving_proto_field_name=False,
        use_integers_for_enums=False,
        always_print_fields_with_no_presence=False,
    )


def duration_s(text: str) -> float | None:
    """Seconds of a REST duration such as ``"3600s"``; None for "" (no limit)."""
    if not text:
        return None
    return duration_seconds(text)
