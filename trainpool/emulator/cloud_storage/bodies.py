"""A request's body, read as it arrives and never held whole: ``Content-Length`` or chunked.

Every framing Google's clients send is read, as Cloud Storage reads it: a body of
``Content-Length`` bytes (google-cloud-storage, gcloud), ``Transfer-Encoding: chunked`` (a
stream of unknown length), and ``Transfer-Encoding: identity`` beside a ``Content-Length``,
which TensorFlow's Cloud Storage file system sends on its empty PUTs and POSTs
(``CurlHttpRequest::SetPutEmptyBody`` in TensorFlow's ``tsl/platform/cloud/
curl_http_request.cc``). ``identity`` is "no transformation" (RFC 2616 3.6; RFC 7230
appendix A.2 removed it from HTTP/1.1, and Cloud Storage still takes it): it is dropped from
the list, and what is left frames the body (nothing: ``Content-Length``, or no body without
one). Any other coding (``gzip``, ``deflate``...) answers 400 naming the
codings read.

The door streams uploads into their partial file chunk by chunk, so an object of any size
costs a chunk of memory (:data:`CHUNK`). A body over the door's limit is refused with 413:
before a byte is read when ``Content-Length`` says so, as soon as it passes the limit when
it is chunked. A ``Content-Length`` that is not a number, a chunk size that is not hex, or a
body that ends early answers 400.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

from trainpool.emulator.cloud_storage.objects import ApiError, bad

CHUNK = 1 << 20
JSON_LIMIT = 1 << 20
"""The largest JSON body (object metadata, a bucket, an IAM policy) the door reads."""
DEFAULT_LIMIT = 5 << 30
"""The largest object the door accepts by default (5 GiB); ``start(storage_max_bytes=)``."""
_DIGITS = re.compile(r"^[0-9]{1,19}$")
_HEX = re.compile(rb"^[0-9a-fA-F]{1,16}$")
_LINE = 1 << 16


CODINGS = "accepted: chunked, identity (a body of Content-Length bytes), or none"


def framing(header: str) -> str:
    """How a body with ``Transfer-Encoding: header`` is framed: ``"chunked"``, or ``""`` (by
    ``Content-Length``: no header, or only ``identity``); 400 for any other coding.

    Codings are a comma-separated list, applied in order, ``chunked`` last (RFC 9112 6.1);
    ``identity`` (no transformation) is taken out wherever it stands.
    """
    codings = [c.strip().lower() for c in header.split(",")]
    if header.strip() and not all(codings):
        raise bad(f"Transfer-Encoding: {header!r} has an empty coding; {CODINGS}")
    left = [c for c in codings if c and c != "identity"]
    if not left:
        return ""
    if left == ["chunked"]:
        return "chunked"
    refused = [c for c in left if c != "chunked"] or left
    raise bad(
        f"Transfer-Encoding: {header.strip()!r}: the door does not decode "
        f"{', '.join(refused)} (and reads chunked once, last); {CODINGS}"
    )


def too_large(size: int | str, limit: int) -> ApiError:
    return ApiError(
        413,
        f"the object would have {size} bytes; accepted: at most {limit} bytes "
        "(the door's limit, trainpool emulator --storage-max-bytes)",
        "uploadTooLarge",
    )


class Body:
    """The body of one request on ``rfile``: at most ``limit`` bytes (413 beyond).

    :attr:`done` is True once the whole body has been read, so the connection can serve
    the next request; a body left unread closes the connection instead.
    """

    def __init__(self, rfile: io.BufferedIOBase, headers: Any, limit: int) -> None:
        self._rfile, self.limit = rfile, limit
        get_all = getattr(headers, "get_all", None)  # every Transfer-Encoding line, in order
        lines = get_all("Transfer-Encoding") if get_all is not None else None
        coding = ", ".join(lines) if lines else headers.get("Transfer-Encoding") or ""
        length = headers.get("Content-Length")
        self.chunked = framing(coding) == "chunked"
        self.length: int | None = None
        self.received = 0
        if not self.chunked and length is not None:
            if not _DIGITS.match(length.strip()):
                raise bad(f"Content-Length: {length!r}; accepted: a number of bytes")
            self.length = int(length.strip())
            if self.length > limit:
                raise too_large(self.length, limit)
        self.done = not self.chunked and not self.length
        self._left_in_chunk = 0

    def chunks(self) -> Iterator[bytes]:
        """The body's bytes, in pieces of at most :data:`CHUNK`."""
        while not self.done:
            piece = self._next_piece()
            if piece:
                self.received += len(piece)
                if self.received > self.limit:
                    raise too_large(f"more than {self.limit}", self.limit)
                yield piece

    def read(self, cap: int = JSON_LIMIT) -> bytes:
        """The whole body, refused with 413 when it passes ``cap`` bytes."""
        if self.length is not None and self.length > cap:
            raise too_large(self.length, cap)
        out = bytearray()
        for piece in self.chunks():
            out += piece
            if len(out) > cap:
                raise too_large(f"more than {cap}", cap)
        return bytes(out)

    def _next_piece(self) -> bytes:
        if not self.chunked:
            assert self.length is not None
            want = min(CHUNK, self.length - self.received)
            piece = self._rfile.read(want)
            if len(piece) < want:
                raise bad(
                    f"the body ended after {self.received + len(piece)} of its "
                    f"{self.length} bytes (Content-Length)"
                )
            if self.received + len(piece) >= self.length:
                self.done = True
            return piece
        if self._left_in_chunk == 0:
            size = self._chunk_size()
            if size == 0:
                self._trailers()
                self.done = True
                return b""
            self._left_in_chunk = size
        piece = self._rfile.read(min(CHUNK, self._left_in_chunk))
        if not piece:
            raise bad("the chunked body ended inside a chunk")
        self._left_in_chunk -= len(piece)
        if self._left_in_chunk == 0 and self._rfile.readline(_LINE).strip():
            raise bad("a chunk of the body is longer than its size says")
        return piece

    def _chunk_size(self) -> int:
        line = self._rfile.readline(_LINE)
        size = line.split(b";", 1)[0].strip()
        if not _HEX.match(size):
            raise bad(f"chunked body: chunk size {line[:40]!r}; accepted: a hexadecimal number")
        return int(size, 16)

    def _trailers(self) -> None:
        for _ in range(100):
            line = self._rfile.readline(_LINE)
            if line in (b"\r\n", b"\n", b""):
                return
        raise bad("chunked body: too many trailer lines")
