"""A ``multipart/related`` upload body, read as it arrives: the JSON metadata, then the media.

The JSON API's multipart upload (https://cloud.google.com/storage/docs/uploading-objects,
"multipart upload") is two parts: the object's metadata as JSON, then its bytes. Clients
write it two ways, and both are read here:

- google-cloud-storage: ``boundary="..."`` (or bare), CRLF line ends (RFC 2046);
- gcloud (apitools, ``transfer.py`` ``__ConfigureMultipartRequest``): ``boundary='...'``
  (Python's ``%r``, single quotes) and LF line ends (``email.generator``).

The line end of the first boundary line decides the line end of the whole body. The media
is handed on in pieces (:meth:`Multipart.media`), never held whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from trainpool.emulator.cloud_storage.bodies import JSON_LIMIT, Body
from trainpool.emulator.cloud_storage.objects import bad
from trainpool.errors import InputError
from trainpool.spec.safe_load import load_json

_BOUNDARY = re.compile(r"""boundary=(?:"([^"]+)"|'([^']+)'|([^\s;"']+))""", re.IGNORECASE)
_HEAD_LIMIT = 1 << 16
_TWO_PARTS = "a multipart upload has two parts: the JSON metadata, then the media"


def boundary_of(content_type: str) -> bytes:
    """The boundary of a ``multipart/related`` Content-Type (double-, single- or unquoted)."""
    found = _BOUNDARY.search(content_type)
    if not content_type.lower().startswith("multipart/") or found is None:
        raise bad(f"Content-Type: {content_type!r}; accepted: multipart/related; boundary=...")
    value = next(group for group in found.groups() if group)
    if len(value) > 70:
        raise bad(f"Content-Type: boundary {value!r}; accepted: at most 70 characters (RFC 2046)")
    return value.encode("latin-1")


class Multipart:
    """The two parts of one upload body: :meth:`metadata` first, then :meth:`media`."""

    def __init__(self, content_type: str, body: Body) -> None:
        self._dash = b"--" + boundary_of(content_type)
        self._pieces = body.chunks()
        self._body = body
        self._buf = b""
        self._eol = b"\r\n"

    def metadata(self) -> dict[str, Any]:
        """The first part, as a JSON object (an empty part is ``{}``)."""
        self._until(self._dash, _HEAD_LIMIT)  # anything before the first boundary is preamble
        self._eol = b"\n" if self._take(1) == b"\n" else b"\r\n"
        if self._eol == b"\r\n" and self._take(1) != b"\n":
            raise bad("multipart body: the first boundary is not followed by a line end")
        self._headers()
        raw = self._until(self._eol + self._dash, JSON_LIMIT)
        if self._peek(2) == b"--":
            raise bad(_TWO_PARTS)
        self._line_end()
        try:
            data = load_json(raw or b"{}", "metadata")
        except InputError:
            raise bad("the first part of a multipart upload is JSON metadata") from None
        if not isinstance(data, dict):
            raise bad("the first part of a multipart upload is a JSON object")
        return data

    def media(self) -> Iterator[bytes]:
        """The second part's bytes, in pieces; the body must end after it."""
        self._headers()
        marker = self._eol + self._dash
        while True:
            at = self._buf.find(marker)
            if at >= 0:
                if at:
                    yield self._buf[:at]
                self._buf = self._buf[at + len(marker) :]
                break
            keep = len(marker) - 1
            if len(self._buf) > keep:
                yield self._buf[: len(self._buf) - keep]
                self._buf = self._buf[len(self._buf) - keep :]
            if not self._more():
                raise bad("multipart body: the media part has no closing boundary")
        if self._take(2) != b"--":
            raise bad(_TWO_PARTS)
        for _ in self._pieces:  # the epilogue, if any
            pass

    def _more(self) -> bool:
        piece = next(self._pieces, b"")
        self._buf += piece
        return bool(piece)

    def _peek(self, n: int) -> bytes:
        while len(self._buf) < n and self._more():
            pass
        return self._buf[:n]

    def _take(self, n: int) -> bytes:
        out = self._peek(n)
        self._buf = self._buf[len(out) :]
        return out

    def _until(self, marker: bytes, cap: int) -> bytes:
        start = 0
        while (at := self._buf.find(marker, start)) < 0:
            if len(self._buf) > cap + len(marker):
                raise bad(f"multipart body: a part's head or metadata is over {cap} bytes")
            start = max(0, len(self._buf) - len(marker) + 1)
            if not self._more():
                raise bad(_TWO_PARTS)
        out, self._buf = self._buf[:at], self._buf[at + len(marker) :]
        return out

    def _line_end(self) -> None:
        if self._take(len(self._eol)) != self._eol:
            raise bad("multipart body: a boundary is not followed by a line end")

    def _headers(self) -> None:
        """Skip a part's headers (none, or lines up to an empty one)."""
        if self._peek(len(self._eol)) == self._eol:
            self._take(len(self._eol))
            return  # no headers
        self._until(self._eol + self._eol, _HEAD_LIMIT)
