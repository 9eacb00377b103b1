"""Proto ⇄ REST JSON for the specs the emulator reads."""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1.types import custom_job as cj

from trainpool.spec import normalize_spec


def job_spec_rest(job_spec: cj.CustomJobSpec) -> dict[str, Any]:
    """The CustomJobSpec as Vertex REST JSON: camelCase, enum names, ints, ``{}`` pools kept."""
    return normalize_spec(cj.CustomJobSpec.to_dict(job_spec))


def duration_s(text: str) -> float | None:
    """Seconds of a REST duration such as ``"3600s"``; None for "" (no limit)."""
    if not text:
        return None
    return float(text.rstrip("s"))
