"""runtime.gcs: gs:// URIs as file paths, on Vertex and locally."""

from __future__ import annotations

import pytest

from trainpool.cluster_env.gcs import GcsUriError
from trainpool.runtime.gcs import local_path


def test_vertex_mount_and_the_stores_gcs_folder() -> None:
    assert local_path("gs://bkt/runs/3/model/", {}) == "/gcs/bkt/runs/3/model/"
    assert local_path("gs://bkt", {}) == "/gcs/bkt/"
    local = {"TRAINPOOL_GCS_ROOT": "/home/u/.trainpool/gcs"}
    assert local_path("gs://bkt/a/b.pt", local) == "/home/u/.trainpool/gcs/bkt/a/b.pt"
    assert local_path("/data/x", local) == "/data/x"
    assert local_path("relative/x", {}) == "relative/x"


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("gs:///x", "a bucket name has 3 to 63 characters"),
        ("gs://b//etc/passwd", "a bucket name has 3 to 63 characters"),
        ("gs://bkt//etc/passwd", "an object name mapped to a path has no empty, '.' or '..'"),
        ("gs://../../x", "a bucket name has 3 to 63 characters"),
        ("gs://bkt/../../x", "an object name mapped to a path has no empty, '.' or '..'"),
    ],
)
def test_hostile_uri_is_refused_with_its_rule(uri: str, problem: str) -> None:
    with pytest.raises(GcsUriError, match=f"uri: '{uri}': {problem}"):
        local_path(uri, {"TRAINPOOL_GCS_ROOT": "/store/gcs"})
