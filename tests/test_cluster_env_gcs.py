"""cluster_env.gcs: Cloud Storage's naming rules, and no URI maps outside the root."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainpool.cluster_env.gcs import GcsUriError, bucket_problem, split, to_path

ROOT = "/store/gcs"


@pytest.mark.parametrize(
    "bucket",
    ["abc", "my-bucket_1", "a" * 63, "example.com.logs", ".".join(["a" * 63] * 3)],
)
def test_valid_bucket_names(bucket: str) -> None:
    assert bucket_problem(bucket) is None


@pytest.mark.parametrize(
    ("bucket", "rule"),
    [
        ("ab", "3 to 63 characters"),
        ("a" * 64, "3 to 63 characters"),
        ("My-Bucket", "only lowercase letters"),
        ("-abc", "starts and ends with a letter or digit"),
        ("abc_", "starts and ends with a letter or digit"),
        ("a..b", "each dot-separated part"),
        ("192.168.5.4", "cannot be an IP address"),
        ("goog-data", "cannot start with 'goog'"),
        ("my-google-bucket", "contain 'google'"),
        ("a b", "only lowercase letters"),
    ],
)
def test_invalid_bucket_names_say_which_rule(bucket: str, rule: str) -> None:
    problem = bucket_problem(bucket)
    assert problem is not None and rule in problem


def test_split_and_path() -> None:
    assert split("gs://bkt/a/b.txt") == ("bkt", "a/b.txt")
    assert split("gs://bkt/dir/") == ("bkt", "dir")
    assert split("gs://bkt") == ("bkt", "")
    assert to_path("gs://bkt/a/b.txt", ROOT) == "/store/gcs/bkt/a/b.txt"
    assert to_path("gs://bkt/dir/", ROOT) == "/store/gcs/bkt/dir/"


@pytest.mark.parametrize(
    "uri",
    [
        "gs://bkt/a\nb",
        "gs://bkt/a\x00b",
        "gs://bkt/" + "x" * 1025,
        "gs://bkt/./x",
        "gs://bkt/a/..",
        "s3://bkt/x",
        "gs:/bkt/x",
    ],
)
def test_refused_before_any_path_is_made(uri: str) -> None:
    with pytest.raises(GcsUriError, match="packageUris: "):
        to_path(uri, ROOT, "packageUris")


def _inside(path: str, root: str) -> bool:
    real = os.path.normpath(path)
    return os.path.commonpath([real, root]) == root and real != root


hostile = st.lists(
    st.sampled_from(["a", "b", ".", "..", "/", "//", "\\", "-", "_", "~", "%2e", "\x00", "\n"]),
    max_size=30,
).map("".join)


@given(tail=hostile)
def test_no_uri_maps_outside_the_root(tail: str) -> None:
    uri = "gs://" + tail
    try:
        path = to_path(uri, ROOT)
    except GcsUriError:
        return
    assert _inside(path, ROOT), (uri, path)
    assert os.path.normpath(path).startswith(ROOT + "/" + split(uri)[0])


@given(bucket=st.sampled_from(["bkt", "my-bkt", "a.b.c"]), tail=hostile)
def test_no_object_escapes_its_bucket(bucket: str, tail: str) -> None:
    try:
        path = to_path(f"gs://{bucket}/{tail}", ROOT)
    except GcsUriError:
        return
    real = os.path.normpath(path)
    assert os.path.commonpath([real, f"{ROOT}/{bucket}"]) == f"{ROOT}/{bucket}"
