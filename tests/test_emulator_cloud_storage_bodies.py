"""Request bodies at the storage door: streamed with a limit, malformed ones answered 400
(never a dropped connection or a traceback), and the door alive after each."""

from __future__ import annotations

import hashlib
import io
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import trainpool.emulator as emulator
from trainpool.emulator.cloud_storage.bodies import DEFAULT_LIMIT, Body
from trainpool.emulator.cloud_storage.objects import ApiError

pytestmark = pytest.mark.timeout(60)
LIMIT = 64 * 1024


@pytest.fixture
def emu(tmp_path: Path) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path / "root", storage_max_bytes=LIMIT) as running:
        (running.root / "gcs" / "bkt").mkdir(parents=True)
        yield running


def raw(emu: emulator.Emulator, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """Send ``head`` (request line and headers; the secret's path prefix is added) and
    ``body`` as they are; the status and body of the answer."""
    assert emu.storage_address is not None
    where = urlsplit(emu.storage_address)
    method, path, rest = head.split(" ", 2)
    request = f"{method} {where.path}{path} {rest}\r\nHost: x\r\nConnection: close\r\n\r\n"
    with socket.create_connection((where.hostname or "", where.port or 0), timeout=10) as conn:
        conn.sendall(request.encode() + body)
        conn.shutdown(socket.SHUT_WR)
        answer = b""
        while piece := conn.recv(65536):
            answer += piece
    status_line, _, rest_of = answer.partition(b"\r\n")
    assert status_line.startswith(b"HTTP/1.1 "), answer[:200]
    return int(status_line.split()[1]), rest_of.partition(b"\r\n\r\n")[2]


def alive(emu: emulator.Emulator) -> bool:
    return raw(emu, "GET /storage/v1/b/bkt HTTP/1.1")[0] == 200


def nothing_written(emu: emulator.Emulator) -> bool:
    uploads = emu.root / "storage-uploads"
    leftovers = list(uploads.iterdir()) if uploads.exists() else []
    return not list((emu.root / "gcs" / "bkt").iterdir()) and not leftovers


UPLOAD = "POST /upload/storage/v1/b/bkt/o?uploadType=media&name=x.bin HTTP/1.1"


@pytest.mark.parametrize(
    ("head", "body", "status", "says"),
    [
        (f"{UPLOAD}\r\nContent-Length: abc", b"", 400, b"Content-Length: 'abc'"),
        (f"{UPLOAD}\r\nContent-Length: -1", b"", 400, b"Content-Length"),
        (f"{UPLOAD}\r\nTransfer-Encoding: chunked", b"zz\r\nab\r\n0\r\n\r\n", 400, b"chunk size"),
        (f"{UPLOAD}\r\nTransfer-Encoding: chunked", b"2\r\nabcdef\r\n0\r\n\r\n", 400, b"longer"),
        (f"{UPLOAD}\r\nTransfer-Encoding: chunked", b"ff\r\nab", 400, b"ended inside"),
        (f"{UPLOAD}\r\nTransfer-Encoding: gzip", b"", 400, b"does not decode gzip"),
        (
            f"{UPLOAD}\r\nTransfer-Encoding: gzip, chunked",
            b"0\r\n\r\n",
            400,
            b"accepted: chunked, identity",
        ),
        (f"{UPLOAD}\r\nTransfer-Encoding: chunked, identity,", b"", 400, b"an empty coding"),
        (f"{UPLOAD}\r\nContent-Length: 10", b"short", 400, b"ended after 5 of its 10"),
        (f"{UPLOAD}\r\nContent-Length: {LIMIT + 1}", b"", 413, b"at most 65536 bytes"),
        (
            f"{UPLOAD}\r\nTransfer-Encoding: chunked",
            b"".join([b"4000\r\n" + b"x" * 0x4000 + b"\r\n"] * 5) + b"0\r\n\r\n",
            413,
            b"at most 65536 bytes",
        ),
        ("POST /storage/v1/b HTTP/1.1\r\nContent-Length: 5", b"{nope", 400, b"not JSON"),
        ("POST /storage/v1/b HTTP/1.1\r\nContent-Length: 2", b"[]", 400, b"JSON object"),
        (
            "POST /upload/storage/v1/b/bkt/o?uploadType=resumable HTTP/1.1\r\n"
            "Content-Length: 2\r\nX-Upload-Content-Length: 99999999",
            b"{}",
            413,
            b"at most",
        ),
        (
            "POST /upload/storage/v1/b/bkt/o?uploadType=multipart HTTP/1.1\r\n"
            "Content-Type: text/plain\r\nContent-Length: 2",
            b"{}",
            400,
            b"multipart/related",
        ),
    ],
)
def test_a_malformed_or_oversized_body_is_refused_and_writes_nothing(
    emu: emulator.Emulator, head: str, body: bytes, status: int, says: bytes
) -> None:
    assert raw(emu, head, body)[:1] == (status,)
    assert says in raw(emu, head, body)[1]
    assert nothing_written(emu)
    assert alive(emu)


@pytest.mark.parametrize(
    ("spec", "status"),
    [
        ("bytes=abc", 400),
        ("bytes=5-2", 400),
        ("bytes=0-1,3-4", 400),
        ("items=0-1", 400),
        ("bytes=-", 400),
        ("bytes=10-", 416),
        ("bytes=-0", 416),
        ("bytes=2-4", 206),
        ("bytes=-3", 206),
        ("bytes=7-100", 206),
    ],
)
def test_a_range_is_one_bytes_range(emu: emulator.Emulator, spec: str, status: int) -> None:
    (emu.root / "gcs" / "bkt" / "ten.txt").write_bytes(b"0123456789")
    got = raw(emu, f"GET /storage/v1/b/bkt/o/ten.txt?alt=media HTTP/1.1\r\nRange: {spec}")
    assert got[0] == status
    if status == 206:
        first, _, last = spec.removeprefix("bytes=").partition("-")
        want = b"0123456789"[int(first) : int(last) + 1] if first else b"0123456789"[-int(last) :]
        assert got[1] == want
    assert alive(emu)


def test_a_chunked_upload_is_streamed_whole(emu: emulator.Emulator) -> None:
    data = bytes(range(256)) * 200
    chunks = b"".join(
        f"{len(data[i : i + 1000]):x}\r\n".encode() + data[i : i + 1000] + b"\r\n"
        for i in range(0, len(data), 1000)
    )
    status, _ = raw(emu, f"{UPLOAD}\r\nTransfer-Encoding: chunked", chunks + b"0\r\n\r\n")
    assert status == 200
    assert (emu.root / "gcs" / "bkt" / "x.bin").read_bytes() == data


def test_an_error_answers_500_without_internal_text(
    emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainpool.emulator.cloud_storage import objects

    def broken(*args: object) -> None:
        raise RuntimeError("internal detail /secret/path")

    monkeypatch.setattr(objects.Objects, "bucket_resource", broken)
    status, body = raw(emu, "GET /storage/v1/b/bkt HTTP/1.1")
    assert status == 500 and b"internal detail" not in body and b"failed to serve" in body


def test_body_reads_in_pieces_and_counts() -> None:
    data = b"y" * (3 * (1 << 20) + 5)
    body = Body(io.BufferedReader(io.BytesIO(data)), {"Content-Length": str(len(data))}, 1 << 30)  # type: ignore[arg-type]
    pieces = list(body.chunks())
    assert max(map(len, pieces)) <= 1 << 20 and len(pieces) == 4 and body.done
    assert hashlib.sha256(b"".join(pieces)).digest() == hashlib.sha256(data).digest()
    with pytest.raises(ApiError, match="at most 4 bytes"):
        Body(io.BufferedReader(io.BytesIO(b"")), {"Content-Length": "5"}, 4)  # type: ignore[arg-type]
    from trainpool.cli.emulator import DEFAULT_STORAGE_LIMIT

    assert DEFAULT_LIMIT == DEFAULT_STORAGE_LIMIT == 5 << 30


def test_expect_100_continue_is_refused_before_the_body_is_sent(emu: emulator.Emulator) -> None:
    assert emu.storage_address is not None
    where = urlsplit(emu.storage_address)
    for path, length, status in (
        (f"{where.path}/upload/storage/v1/b/bkt/o?uploadType=media&name=x", LIMIT + 1, b"413"),
        ("/upload/storage/v1/b/bkt/o?uploadType=media&name=x", 5, b"403"),
        (f"{where.path}/upload/storage/v1/b/bkt/o?uploadType=media&name=x", 5, b"100"),
    ):
        head = (
            f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n"
            "Expect: 100-continue\r\n\r\n"
        )
        with socket.create_connection((where.hostname or "", where.port or 0), timeout=10) as conn:
            conn.sendall(head.encode())
            first = conn.recv(65536).split(b"\r\n", 1)[0]
            assert first.split()[1] == status, first
            if status == b"100":
                conn.sendall(b"12345")
                rest = b""
                while b"}" not in rest:
                    rest += conn.recv(65536)
                assert b"200 OK" in rest
    assert (emu.root / "gcs" / "bkt" / "x").read_bytes() == b"12345"


def framed(body: bytes, framing: str) -> tuple[str, bytes]:
    """Headers and body of ``body`` sent with ``framing``: ``length`` (Content-Length, as
    google-cloud-storage and gcloud send), ``identity`` (and Content-Length, as TensorFlow's
    Cloud Storage file system sends its empty PUTs and POSTs), ``chunked`` (a stream)."""
    if framing == "chunked":
        chunks = b"".join(
            f"{len(body[i : i + 7]):x}\r\n".encode() + body[i : i + 7] + b"\r\n"
            for i in range(0, len(body), 7)
        )
        return "\r\nTransfer-Encoding: chunked", chunks + b"0\r\n\r\n"
    head = f"\r\nContent-Length: {len(body)}"
    if framing == "identity":
        head += "\r\nTransfer-Encoding: identity"
    return head, body


FRAMINGS = ("length", "identity", "chunked")
MEDIA = b"weights \x00\x01\r\n" * 9


def test_every_transfer_encoding_line_counts(emu: emulator.Emulator) -> None:
    """Two lines are one list (RFC 9110 5.3): ``identity`` then ``chunked`` is chunked."""
    head, body = framed(MEDIA, "chunked")
    status, answer = raw(emu, f"{UPLOAD}\r\nTransfer-Encoding: identity{head}", body)
    assert status == 200, answer
    assert (emu.root / "gcs" / "bkt" / "x.bin").read_bytes() == MEDIA
    status, answer = raw(
        emu, f"{UPLOAD}\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip", body
    )
    assert status == 400 and b"does not decode gzip" in answer


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_simple_upload_in_each_framing(emu: emulator.Emulator, framing: str) -> None:
    head, body = framed(MEDIA, framing)
    status, answer = raw(emu, f"{UPLOAD}{head}", body)
    assert status == 200, answer
    assert (emu.root / "gcs" / "bkt" / "x.bin").read_bytes() == MEDIA


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_multipart_upload_in_each_framing(emu: emulator.Emulator, framing: str) -> None:
    multipart = (
        b'--b1\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{"name": "m.bin"}\r\n'
        b"--b1\r\nContent-Type: application/octet-stream\r\n\r\n" + MEDIA + b"\r\n--b1--\r\n"
    )
    head, body = framed(multipart, framing)
    status, answer = raw(
        emu,
        "POST /upload/storage/v1/b/bkt/o?uploadType=multipart HTTP/1.1\r\n"
        f'Content-Type: multipart/related; boundary="b1"{head}',
        body,
    )
    assert status == 200, answer
    assert (emu.root / "gcs" / "bkt" / "m.bin").read_bytes() == MEDIA


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_resumable_upload_in_each_framing(emu: emulator.Emulator, framing: str) -> None:
    """As TensorFlow drives it (``gcs_file_system.cc``): the session started by a POST with
    an empty body, the media PUT with ``Content-Range``, a status query by an empty PUT
    (``bytes */TOTAL``); each request in ``framing``."""
    assert emu.storage_address is not None
    where = urlsplit(emu.storage_address)
    head, body = framed(b"", framing)
    start = (
        "POST /upload/storage/v1/b/bkt/o?uploadType=resumable&name=r.bin HTTP/1.1\r\n"
        f"X-Upload-Content-Length: {len(MEDIA)}{head}"
    )
    with socket.create_connection((where.hostname or "", where.port or 0), timeout=10) as conn:
        request = f"{start.replace(' /', f' {where.path}/', 1)}\r\nHost: x\r\n\r\n"
        conn.sendall(request.encode() + body)
        answer = b""
        while b"\r\n\r\n" not in answer and (piece := conn.recv(65536)):
            answer += piece
    assert answer.startswith(b"HTTP/1.1 200"), answer
    location = next(
        line.split(b": ", 1)[1].decode()
        for line in answer.split(b"\r\n")
        if line.lower().startswith(b"location:")
    )
    session = location.removeprefix(emu.storage_address)
    half = len(MEDIA) // 2
    head, body = framed(MEDIA[:half], framing)
    status, _ = raw(
        emu, f"PUT {session} HTTP/1.1\r\nContent-Range: bytes 0-{half - 1}/*{head}", body
    )
    assert status == 308
    head, body = framed(b"", framing)
    status, _ = raw(
        emu, f"PUT {session} HTTP/1.1\r\nContent-Range: bytes */{len(MEDIA)}{head}", body
    )
    assert status == 308, "a status query: not whole yet"
    head, body = framed(MEDIA[half:], framing)
    last = f"bytes {half}-{len(MEDIA) - 1}/{len(MEDIA)}"
    status, answer = raw(emu, f"PUT {session} HTTP/1.1\r\nContent-Range: {last}{head}", body)
    assert status == 200, answer
    assert (emu.root / "gcs" / "bkt" / "r.bin").read_bytes() == MEDIA


@pytest.mark.parametrize(
    ("header", "framing"),
    [
        ("", ""),
        ("identity", ""),
        (" Identity ", ""),
        ("chunked", "chunked"),
        ("identity, chunked", "chunked"),
        ("chunked, identity", "chunked"),
    ],
)
def test_identity_is_no_coding(header: str, framing: str) -> None:
    from trainpool.emulator.cloud_storage.bodies import framing as framing_of

    assert framing_of(header) == framing


def test_a_json_api_path_the_door_lacks_is_named_never_read_as_an_object(
    emu: emulator.Emulator,
) -> None:
    (emu.root / "gcs" / "storage" / "v1" / "b" / "bkt").mkdir(parents=True)
    (emu.root / "gcs" / "storage" / "v1" / "b" / "bkt" / "notifications").write_text("x")
    status, body = raw(emu, "GET /storage/v1/b/bkt/notifications HTTP/1.1")
    assert status == 501 and b"GET /storage/v1/b/bkt/notifications: not served" in body
    status, body = raw(emu, "GET /storage/v1/b/bkt/storageLayout HTTP/1.1")
    assert status == 200 and b'"hierarchicalNamespace": {"enabled": false}' in body
    assert raw(emu, "GET /storage/v1/b/nobkt/storageLayout HTTP/1.1")[0] == 404
    status, body = raw(emu, "GET /storage/v1/b/bkt/managedFolders HTTP/1.1")
    assert status == 200 and b'"items": []' in body


@pytest.mark.parametrize("bucket", ["%2E%2E", "..%2Fgcs", "%2E", "bkt%2F..%2F..", "UPPER"])
def test_a_hostile_bucket_name_is_refused_before_a_delete(
    emu: emulator.Emulator, bucket: str
) -> None:
    (emu.root / "gcs" / "keep").mkdir()
    status, body = raw(emu, f"DELETE /storage/v1/b/{bucket} HTTP/1.1")
    assert status == 400 and b"bucket name" in body, body
    assert (emu.root / "gcs" / "keep").is_dir() and (emu.root / "gcs" / "bkt").is_dir()
    assert alive(emu)
