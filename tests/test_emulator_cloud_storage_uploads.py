"""Resumable uploads at the storage door, as gcloud drives them: its ``/resumable/upload``
path, chunks with and without a known total, ``bytes */*`` status queries, and a session
that refuses a wrong chunk without losing what it has."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import trainpool.emulator as emulator

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def emu(tmp_path: Path) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path / "root") as running:
        (running.root / "gcs" / "bkt").mkdir(parents=True)
        yield running


def call(
    emu: emulator.Emulator, method: str, url: str, body: bytes = b"", **headers: str
) -> http.client.HTTPResponse:
    """``url`` is absolute, or a path after the door's address (secret included)."""
    assert emu.storage_address is not None
    full = urlsplit(url if url.startswith("http") else emu.storage_address + url)
    conn = http.client.HTTPConnection(full.hostname or "", full.port, timeout=10)
    conn.request(method, f"{full.path}?{full.query}", body=body, headers=headers)
    answer = conn.getresponse()
    answer.read()
    conn.close()
    return answer


def content(
    emu: emulator.Emulator, method: str, url: str, body: bytes = b"", **h: str
) -> dict[str, Any]:
    assert emu.storage_address is not None
    full = urlsplit(url if url.startswith("http") else emu.storage_address + url)
    conn = http.client.HTTPConnection(full.hostname or "", full.port, timeout=10)
    conn.request(method, f"{full.path}?{full.query}", body=body, headers=h)
    answer = conn.getresponse()
    data = json.loads(answer.read() or b"{}")
    conn.close()
    data["status"] = answer.status
    return data


def test_a_resumable_upload_as_gcloud_drives_it(emu: emulator.Emulator) -> None:
    start = call(
        emu,
        "POST",
        "/resumable/upload/storage/v1/b/bkt/o?alt=json&uploadType=resumable",
        json.dumps({"name": "up/r.bin"}).encode(),
        **{"Content-Type": "application/json", "X-Upload-Content-Type": "application/gzip"},
    )
    assert start.status == 200
    session = start.headers["Location"]
    assert session.startswith(emu.storage_address or "-") and "upload_id=" in session
    one = call(emu, "PUT", session, b"01234", **{"Content-Range": "bytes 0-4/*"})
    assert (one.status, one.headers["Range"]) == (308, "bytes=0-4")
    status = call(emu, "PUT", session, b"", **{"Content-Range": "bytes */*"})
    assert (status.status, status.headers["Range"]) == (308, "bytes=0-4")
    wrong_start = content(emu, "PUT", session, b"xyz", **{"Content-Range": "bytes 3-5/*"})
    assert wrong_start["status"] == 400 and "the next byte, 5" in wrong_start["error"]["message"]
    wrong_size = content(emu, "PUT", session, b"56", **{"Content-Range": "bytes 5-7/*"})
    assert wrong_size["status"] == 400 and "names 3 bytes; the body has 2" in str(wrong_size)
    assert call(emu, "PUT", session, b"", **{"Content-Range": "bytes */*"}).headers["Range"] == (
        "bytes=0-4"
    ), "a refused chunk leaves the session as it was"
    done = content(emu, "PUT", session, b"56789", **{"Content-Range": "bytes 5-9/10"})
    assert done["status"] == 200 and done["size"] == "10" and done["name"] == "up/r.bin"
    assert done["md5Hash"] == base64.b64encode(hashlib.md5(b"0123456789").digest()).decode()
    assert "crc32c" in done
    assert (emu.root / "gcs" / "bkt" / "up" / "r.bin").read_bytes() == b"0123456789"
    assert call(emu, "PUT", session, b"", **{"Content-Range": "bytes */10"}).status == 404
    assert not list((emu.root / "storage-uploads").iterdir())


def test_an_empty_final_chunk_and_a_status_query_with_the_total(emu: emulator.Emulator) -> None:
    start = call(emu, "POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable&name=e.txt")
    session = start.headers["Location"]
    assert call(emu, "PUT", session, b"abc", **{"Content-Range": "bytes 0-2/*"}).status == 308
    done = content(emu, "PUT", session, b"", **{"Content-Range": "bytes */3"})
    assert done["status"] == 200 and done["size"] == "3"


def test_create_only_is_honoured_before_the_session_starts(emu: emulator.Emulator) -> None:
    (emu.root / "gcs" / "bkt" / "there.txt").write_text("kept")
    url = "/upload/storage/v1/b/bkt/o?uploadType=resumable&name=there.txt&ifGenerationMatch=0"
    assert call(emu, "POST", url).status == 412
    media = "/upload/storage/v1/b/bkt/o?uploadType=media&name=there.txt&ifGenerationMatch=0"
    assert call(emu, "POST", media, b"new").status == 412
    assert (emu.root / "gcs" / "bkt" / "there.txt").read_text() == "kept"
    assert call(emu, "PUT", "/upload/storage/v1/b/bkt/o?upload_id=nope", b"x").status == 404


def test_compose_joins_up_to_32_objects_in_order(emu: emulator.Emulator) -> None:
    stored = emu.root / "gcs" / "bkt"
    (stored / "parts").mkdir()
    for i in range(3):
        (stored / "parts" / f"{i}").write_bytes(bytes([65 + i]) * 3)
    body = {"sourceObjects": [{"name": f"parts/{i}"} for i in (2, 0, 1)]}
    done = content(emu, "POST", "/storage/v1/b/bkt/o/joined.bin/compose", json.dumps(body).encode())
    assert done["status"] == 200 and done["size"] == "9" and "crc32c" in done
    assert (stored / "joined.bin").read_bytes() == b"CCCAAABBB"
    too_many = {"sourceObjects": [{"name": "parts/0"}] * 33}
    refused = content(emu, "POST", "/storage/v1/b/bkt/o/x/compose", json.dumps(too_many).encode())
    assert refused["status"] == 400 and "1 to 32" in refused["error"]["message"]
    missing = {"sourceObjects": [{"name": "parts/9"}]}
    assert (
        content(emu, "POST", "/storage/v1/b/bkt/o/x/compose", json.dumps(missing).encode())[
            "status"
        ]
        == 404
    )
    assert not (stored / "x").exists()
    for i in range(3):
        assert call(emu, "DELETE", f"/storage/v1/b/bkt/o/parts%2F{i}").status == 204
    assert not (stored / "parts").exists(), "an emptied prefix leaves no folder"


@pytest.fixture
def client(emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch) -> Any:
    from google.cloud import storage  # type: ignore[attr-defined]

    assert emu.storage_address is not None
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", emu.storage_address)
    return storage.Client(project="p")


def test_rewrite_and_copy_make_the_object_in_one_call(emu: emulator.Emulator, client: Any) -> None:
    from google.api_core import exceptions

    data = bytes(range(256)) * 5000
    source = client.bucket("bkt").blob("ckpt/part-0.tmp")
    source.upload_from_string(data)
    client.create_bucket("other")
    target = client.bucket("other").blob("ckpt/part-0")
    token, rewritten, total = target.rewrite(source)
    assert (token, rewritten, total) == (None, len(data), len(data))
    assert target.md5_hash == source.md5_hash and target.size == len(data)
    copied = client.bucket("bkt").copy_blob(source, client.bucket("bkt"), "ckpt/copy")
    assert copied.download_as_bytes() == data
    assert (emu.root / "gcs" / "other" / "ckpt" / "part-0").read_bytes() == data
    with pytest.raises(exceptions.NotFound, match="No such object: bkt/missing"):
        target.rewrite(client.bucket("bkt").blob("missing"))


def test_a_folder_marker_is_kept_as_the_folder(emu: emulator.Emulator, client: Any) -> None:
    """An empty object whose name ends in '/' (TensorFlow's ``CreateDir``, the console's
    "create folder") is the folder; the store cannot keep bytes under such a name."""
    from google.api_core import exceptions

    bucket = client.bucket("bkt")
    bucket.blob("saved/variables/").upload_from_string(b"")
    assert (emu.root / "gcs" / "bkt" / "saved" / "variables").is_dir()
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("saved/variables/").upload_from_string(b"", if_generation_match=0)
    with pytest.raises(exceptions.BadRequest, match="keeps a name ending in '/' as a folder"):
        bucket.blob("saved/other/").upload_from_string(b"bytes")
    assert not (emu.root / "gcs" / "bkt" / "saved" / "other").exists()
    assert [b.name for b in client.list_blobs("bkt")] == [], "a folder is no object"
    client.bucket("bkt").delete()
    assert not (emu.root / "gcs" / "bkt").exists()
