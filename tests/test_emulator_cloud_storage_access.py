"""The storage door lets in whoever proves the root's secret (path prefix or bearer token)
and nobody else: a request without it is answered 403 and touches nothing."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from google.api_core import exceptions
from google.cloud import storage  # type: ignore[attr-defined]

import trainpool.emulator as emulator
from trainpool.emulator.cloud_storage.access import DoorKey

pytestmark = pytest.mark.timeout(60)
KEY = DoorKey("http://127.0.0.1:1", "s3cr3t", Path("/r/storage.token"))


@pytest.mark.parametrize(
    ("path", "authorization", "admitted"),
    [
        ("/s3cr3t/storage/v1/b", None, "/storage/v1/b"),
        ("/s3cr3t", None, "/"),
        ("/storage/v1/b", "Bearer s3cr3t", "/storage/v1/b"),
        ("/storage/v1/b", "bearer  s3cr3t ", "/storage/v1/b"),
        ("/storage/v1/b", None, None),
        ("/s3cr3/storage/v1/b", None, None),
        ("/s3cr3tX/storage/v1/b", None, None),
        ("/x/s3cr3t/storage/v1/b", None, None),
        ("/storage/v1/b", "Bearer s3cr3", None),
        ("/storage/v1/b", "Basic s3cr3t", None),
        ("/storage/v1/b", "s3cr3t", None),
    ],
)
def test_only_the_secret_admits(path: str, authorization: str | None, admitted: str) -> None:
    assert KEY.admit(path, authorization) == admitted


@pytest.fixture
def emu(tmp_path: Path) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path / "root") as running:
        (running.root / "gcs" / "bkt").mkdir(parents=True)
        (running.root / "gcs" / "bkt" / "kept.txt").write_text("kept")
        yield running


def call(
    emu: emulator.Emulator, method: str, path: str, body: bytes = b"", **headers: str
) -> tuple[int, bytes]:
    assert emu.storage_address is not None
    where = urlsplit(emu.storage_address)
    conn = http.client.HTTPConnection(where.hostname or "", where.port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def test_without_the_secret_nothing_is_read_written_or_deleted(emu: emulator.Emulator) -> None:
    assert emu.storage_address is not None
    secret = emu.storage_address.rsplit("/", 1)[1]
    before = sorted(p.relative_to(emu.root) for p in emu.root.rglob("*"))
    attempts = [
        ("GET", "/storage/v1/b/bkt/o", {}),
        ("GET", "/storage/v1/b/bkt/o/kept.txt?alt=media", {}),
        ("GET", "/download/storage/v1/b/bkt/o/kept.txt?alt=media", {}),
        ("DELETE", "/storage/v1/b/bkt/o/kept.txt", {}),
        ("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=planted", {}),
        ("POST", "/storage/v1/b", {}),
        ("GET", f"/{secret[:-1]}/storage/v1/b/bkt/o", {}),
        ("GET", f"/x/{secret}/storage/v1/b/bkt/o", {}),
        ("GET", "/storage/v1/b/bkt/o", {"Authorization": f"Bearer {secret[:-1]}"}),
        ("GET", "/storage/v1/b/bkt/o", {"Authorization": f"Basic {secret}"}),
    ]
    for method, path, headers in attempts:
        status, body = call(emu, method, path, b'{"name": "made"}', **headers)
        assert status == 403, (method, path, status)
        assert b"owner only" in body and b"kept" not in body and secret.encode() not in body
    after = sorted(p.relative_to(emu.root) for p in emu.root.rglob("*"))
    assert after == before
    assert (emu.root / "gcs" / "bkt" / "kept.txt").read_text() == "kept"


def test_the_secret_as_a_path_prefix_or_a_bearer_token_lets_the_owner_in(
    emu: emulator.Emulator,
) -> None:
    assert emu.storage_address is not None
    secret = emu.storage_address.rsplit("/", 1)[1]
    assert call(emu, "GET", f"/{secret}/storage/v1/b/bkt/o/kept.txt?alt=media") == (200, b"kept")
    bearer = {"Authorization": f"Bearer {secret}"}
    assert call(emu, "GET", "/storage/v1/b/bkt/o/kept.txt?alt=media", b"", **bearer) == (
        200,
        b"kept",
    )


def test_the_client_without_the_secret_is_refused(
    emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert emu.storage_address is not None
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", emu.storage_address.rsplit("/", 1)[0])
    with pytest.raises(exceptions.Forbidden, match="owner only"):
        storage.Client(project="p").bucket("bkt").blob("kept.txt").download_as_bytes()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", emu.storage_address)
    assert storage.Client(project="p").bucket("bkt").blob("kept.txt").download_as_bytes() == b"kept"
