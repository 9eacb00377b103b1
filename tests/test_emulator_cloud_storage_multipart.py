"""Multipart uploads as google-cloud-storage writes them (CRLF, ``boundary="..."``) and as
gcloud writes them (apitools: LF line ends, ``boundary='...'``), read as they arrive."""

from __future__ import annotations

import base64
import email.generator
import hashlib
import io
import json
from collections.abc import Iterator
from email.mime.multipart import MIMEMultipart
from email.mime.nonmultipart import MIMENonMultipart
from typing import Any

import pytest

from trainpool.emulator.cloud_storage.bodies import Body
from trainpool.emulator.cloud_storage.multipart import Multipart, boundary_of
from trainpool.emulator.cloud_storage.objects import ApiError

MEDIA = b"line one\r\nline two\n--not a boundary\r\n--\r\n" + bytes(range(256)) * 50 + b"\r"


class MultipartBytesGenerator(email.generator.BytesGenerator):
    """apitools' generator (``transfer.py``): payloads written as they are."""

    def _handle_text(self, msg: Any) -> None:
        if msg._payload is not None:
            self.write(msg._payload)

    def _encode(self, s: str) -> bytes:
        return s.encode("ascii", "surrogateescape")

    _writeBody = _handle_text  # noqa: N815 - the stdlib's name


def apitools_body(metadata: dict[str, str], media: bytes) -> tuple[str, bytes]:
    """What gcloud sends, built the way apitools builds it
    (``apitools/base/py/transfer.py`` ``__ConfigureMultipartRequest``)."""
    root = MIMEMultipart("related")
    root._write_headers = lambda self: None  # type: ignore[attr-defined]
    part = MIMENonMultipart("application", "json")
    part.set_payload(json.dumps(metadata))
    root.attach(part)
    part = MIMENonMultipart("application", "octet-stream")
    part["Content-Transfer-Encoding"] = "binary"
    part.set_payload(media)
    root.attach(part)
    out = io.BytesIO()
    MultipartBytesGenerator(out, mangle_from_=False).flatten(root, unixfrom=False)
    return f"multipart/related; boundary={root.get_boundary()!r}", out.getvalue()


def crlf_body(metadata: dict[str, str], media: bytes, boundary: str = "==b==") -> bytes:
    return (
        (
            f"--{boundary}\r\ncontent-type: application/json; charset=UTF-8\r\n\r\n"
            f"{json.dumps(metadata)}\r\n--{boundary}\r\ncontent-type: text/plain\r\n\r\n"
        ).encode()
        + media
        + f"\r\n--{boundary}--".encode()
    )


def read(content_type: str, data: bytes, piece: int = 7) -> tuple[dict[str, object], bytes]:
    """Parse ``data`` arriving ``piece`` bytes at a time (boundaries split across reads)."""
    body = Body(io.BufferedReader(io.BytesIO(data)), {"Content-Length": str(len(data))}, 1 << 30)  # type: ignore[arg-type]
    chunks: Iterator[bytes] = (data[i : i + piece] for i in range(0, len(data), piece))
    body.chunks = lambda: chunks  # type: ignore[method-assign]
    parts = Multipart(content_type, body)
    meta = parts.metadata()
    return meta, b"".join(parts.media())


def test_gclouds_single_quoted_lf_body_is_read() -> None:
    content_type, data = apitools_body({"name": "up/x.bin"}, MEDIA)
    assert "boundary='" in content_type and not data.split(b"\n", 1)[0].endswith(b"\r")
    for piece in (1, 7, 4096, len(data)):
        assert read(content_type, data, piece) == ({"name": "up/x.bin"}, MEDIA)


@pytest.mark.parametrize("quoted", ['"==b=="', "==b==", "'==b=='"])
def test_the_python_clients_crlf_body_is_read(quoted: str) -> None:
    data = crlf_body({"name": "a"}, MEDIA)
    for piece in (1, 5, len(data)):
        assert read(f"multipart/related; boundary={quoted}", data, piece) == ({"name": "a"}, MEDIA)


@pytest.mark.parametrize(
    ("content_type", "data", "says"),
    [
        ("multipart/related", b"", "boundary="),
        ("application/json; boundary=x", b"", "multipart/related"),
        ("multipart/related; boundary=b", b"--b\r\n\r\n{}\r\n--b--", "two parts"),
        ("multipart/related; boundary=b", b"--b\r\n\r\n{}\r\n--b\r\n\r\nxyz", "no closing"),
        (
            "multipart/related; boundary=b",
            b"--b\r\n\r\n{}\r\n--b\r\n\r\nx\r\n--b\r\n\r\ny\r\n--b--",
            "two parts",
        ),
        ("multipart/related; boundary=b", b"--b\r\n\r\n[1]\r\n--b\r\n\r\nx\r\n--b--", "object"),
        ("multipart/related; boundary=b", b"--b\r\n\r\n{x\r\n--b\r\n\r\nx\r\n--b--", "JSON"),
        ("multipart/related; boundary=b", b"no boundary at all", "two parts"),
    ],
)
def test_a_malformed_body_is_refused(content_type: str, data: bytes, says: str) -> None:
    with pytest.raises(ApiError, match=says) as refused:
        read(content_type, data)
    assert refused.value.status == 400


def test_boundary_of_accepts_every_quoting() -> None:
    assert boundary_of("multipart/related; boundary='=a='") == b"=a="
    assert boundary_of('multipart/related; boundary="a b"; x=1') == b"a b"
    assert boundary_of("Multipart/Related; BOUNDARY=abc") == b"abc"


def test_the_upload_answer_has_the_hashes_gcloud_checks(tmp_path: object) -> None:
    from pathlib import Path

    from trainpool.emulator.cloud_storage.objects import file_hashes

    path = Path(str(tmp_path)) / "f"
    path.write_bytes(MEDIA)
    found = file_hashes(path)
    assert found["md5Hash"] == base64.b64encode(hashlib.md5(MEDIA).digest()).decode()
    assert len(base64.b64decode(found["crc32c"])) == 4
