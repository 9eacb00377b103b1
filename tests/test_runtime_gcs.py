"""runtime.gcs: gs:// URIs as file paths, on Vertex and locally."""

from __future__ import annotations

import pytest

from trainpool.runtime.gcs import local_path


def test_vertex_mount_and_local_store() -> None:
    assert local_path("gs://bkt/runs/3/model/", {}) == "/gcs/bkt/runs/3/model/"
    assert local_path("gs://bkt", {}) == "/gcs/bkt/"
    local = {"TRAINPOOL_GCS_ROOT": "/home/u/.trainpool/gcs"}
    assert local_path("gs://bkt/a/b.pt", local) == "/home/u/.trainpool/gcs/bkt/a/b.pt"
    assert local_path("/data/x", local) == "/data/x"
    assert local_path("relative/x", {}) == "relative/x"


def test_uri_without_bucket_is_refused() -> None:
    with pytest.raises(ValueError, match="uri: 'gs:///x' names no bucket; accepted: gs://BUCKET"):
        local_path("gs:///x", {})
