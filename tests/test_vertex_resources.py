"""gcp_resources in GCPC's format, read back by GCPC's own proto."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainpool.vertex import resources

NAME = "projects/demo/locations/europe-west4/customJobs/12"


def test_written_file_is_gcpc_json_and_reads_back(tmp_path: Path) -> None:
    out = tmp_path / "outputs" / "gcp_resources"
    resources.write(out, "CustomJob", NAME, "europe-west4")
    assert out.read_text() == (
        '{\n  "resources": [\n    {\n      "resourceType": "CustomJob",\n'
        '      "resourceUri": "https://europe-west4-aiplatform.googleapis.com/v1/' + NAME + '"\n'
        "    }\n  ]\n}"
    )
    assert resources.read(out, "CustomJob") == NAME


def test_missing_or_empty_file_means_no_job_yet(tmp_path: Path) -> None:
    assert resources.read(tmp_path / "absent", "CustomJob") is None
    (tmp_path / "empty").write_text("")
    assert resources.read(tmp_path / "empty", "CustomJob") is None


def test_a_file_for_another_job_type_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "gcp_resources"
    resources.write(out, "HyperparameterTuningJob", NAME, "europe-west4")
    with pytest.raises(
        ValueError, match="resourceType 'HyperparameterTuningJob'; accepted: 'CustomJob'"
    ):
        resources.read(out, "CustomJob")
