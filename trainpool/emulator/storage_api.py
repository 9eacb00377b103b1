"""The local store's objects through the Cloud Storage JSON API, for ``STORAGE_EMULATOR_HOST``.

One store, three doors: the object ``gs://BUCKET/OBJECT`` is the file
``<root>/gcs/BUCKET/OBJECT`` (by path), ``/gcs/BUCKET/OBJECT`` in a replica, and, here,
the JSON API (https://cloud.google.com/storage/docs/json_api) on ``http://127.0.0.1:PORT``
for clients that honour ``STORAGE_EMULATOR_HOST`` (google-cloud-storage, the aiplatform
SDK's bucket checks). A bucket is a folder, an object a file; every name goes through
:mod:`trainpool.cluster_env.gcs` (a name it refuses answers 400 with the rule, so no
request reaches a path outside the store). There is no side store of metadata: size,
``md5Hash``, ``crc32c``, ``updated`` and ``generation`` (the file's ``st_mtime_ns``) are
read from the file, ``contentType`` is guessed from the name, so an object written by
path or at ``/gcs`` is served at once. Uploads are written whole, then renamed.

Served (the subset google-cloud-storage 3.x uses): bucket get and insert, bucket IAM
get and set (answered, not kept), object get, media download (``Range`` too), list
(``prefix``, ``delimiter``, ``maxResults``, ``pageToken``), upload
(``uploadType=media|multipart|resumable``, the resumable session's PUTs) and delete.
Anything else answers 501 naming the request.

Loopback only, no authentication (a client with ``STORAGE_EMULATOR_HOST`` sends none):
every local user can reach the port, so the emulator serves it only when asked
(``start(..., storage=True)``, ``trainpool emulator --storage``).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import mimetypes
import os
import re
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from trainpool.cluster_env import gcs

UPLOADS_DIR = "storage-uploads"
MAX_RESULTS = 1000
_CHUNK = 1 << 20
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
_CONTENT_RANGE = re.compile(r"^bytes (?:(\d+)-(\d+)|\*)/(\d+|\*)$")


class ApiError(Exception):
    """An answer other than success: HTTP status, message, JSON API ``reason``."""

    def __init__(self, status: int, message: str, reason: str = "invalid") -> None:
        super().__init__(message)
        self.status, self.message, self.reason = status, message, reason


def _bad(message: str) -> ApiError:
    return ApiError(400, message, "invalid")


def _not_found(message: str) -> ApiError:
    return ApiError(404, message, "notFound")


def _rfc3339(seconds: float) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode("ascii")


def _crc32c(path: Path) -> str | None:
    try:
        import google_crc32c
    except ImportError:  # pragma: no cover - installed with google-cloud-storage
        return None
    checksum = google_crc32c.Checksum()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            checksum.update(chunk)
    return _b64(checksum.digest())


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return _b64(digest.digest())


@dataclass
class _Upload:
    """One resumable upload session: bytes received so far in ``partial``."""

    bucket: str
    name: str
    partial: Path
    received: int = 0


class Store:
    """Buckets and objects of ``<root>/gcs``, by Cloud Storage names."""

    def __init__(self, gcs_root: Path, uploads: Path, base_url: str = "") -> None:
        self.gcs_root = gcs_root
        self.uploads_dir = uploads
        self.base_url = base_url
        self._uploads: dict[str, _Upload] = {}
        self._lock = threading.Lock()

    # names -> paths, only through cluster_env.gcs
    def bucket_path(self, bucket: str) -> Path:
        try:
            gcs.split(gcs.SCHEME + bucket, "bucket")
        except gcs.GcsUriError as err:
            raise _bad(str(err)) from None
        return Path(gcs.to_path(gcs.SCHEME + bucket + "/", self.gcs_root, "bucket"))

    def object_path(self, bucket: str, name: str) -> Path:
        uri = f"{gcs.SCHEME}{bucket}/{name}"
        if not name or name.endswith("/"):
            raise _bad(
                f"object: {uri!r}: the local store maps an object to a file; "
                "accepted: a name that does not end in '/'"
            )
        try:
            return Path(gcs.to_path(uri, self.gcs_root, "object"))
        except gcs.GcsUriError as err:
            raise _bad(str(err)) from None

    # resources
    def bucket_resource(self, bucket: str) -> dict[str, Any]:
        path = self.bucket_path(bucket)
        if not path.is_dir():
            raise _not_found(f"The specified bucket does not exist: {bucket}")
        st = path.stat()
        return {
            "kind": "storage#bucket",
            "id": bucket,
            "name": bucket,
            "selfLink": f"{self.base_url}/storage/v1/b/{bucket}",
            "projectNumber": "0",
            "metageneration": "1",
            "location": "US",
            "locationType": "multi-region",
            "storageClass": "STANDARD",
            "timeCreated": _rfc3339(st.st_mtime),
            "updated": _rfc3339(st.st_mtime),
            "etag": "CAE=",
        }

    def create_bucket(self, body: dict[str, Any]) -> dict[str, Any]:
        bucket = str(body.get("name", ""))
        path = self.bucket_path(bucket)
        try:
            path.mkdir(parents=True)
        except FileExistsError:
            raise ApiError(
                409, f"The bucket {bucket} already exists in the local store", "conflict"
            ) from None
        return self.bucket_resource(bucket)

    def object_resource(self, bucket: str, name: str, hashes: bool = True) -> dict[str, Any]:
        self.bucket_resource(bucket)
        path = self.object_path(bucket, name)
        if not path.is_file():
            raise _not_found(f"No such object: {bucket}/{name}")
        return self._describe(bucket, name, path, hashes)

    def _describe(self, bucket: str, name: str, path: Path, hashes: bool) -> dict[str, Any]:
        st = path.stat()
        generation = str(st.st_mtime_ns)
        quoted = quote(name, safe="")
        resource: dict[str, Any] = {
            "kind": "storage#object",
            "id": f"{bucket}/{name}/{generation}",
            "selfLink": f"{self.base_url}/storage/v1/b/{bucket}/o/{quoted}",
            "mediaLink": f"{self.base_url}/download/storage/v1/b/{bucket}/o/{quoted}"
            f"?generation={generation}&alt=media",
            "name": name,
            "bucket": bucket,
            "generation": generation,
            "metageneration": "1",
            "contentType": mimetypes.guess_type(name)[0] or "application/octet-stream",
            "storageClass": "STANDARD",
            "size": str(st.st_size),
            "timeCreated": _rfc3339(st.st_mtime),
            "updated": _rfc3339(st.st_mtime),
            "timeStorageClassUpdated": _rfc3339(st.st_mtime),
            "etag": _b64(generation.encode()),
        }
        if hashes:
            resource["md5Hash"] = _md5(path)
            crc = _crc32c(path)
            if crc is not None:
                resource["crc32c"] = crc
        return resource

    def list_objects(self, bucket: str, query: dict[str, str]) -> dict[str, Any]:
        root = self.bucket_path(bucket)
        self.bucket_resource(bucket)
        prefix, delimiter = query.get("prefix", ""), query.get("delimiter", "")
        after = query.get("pageToken", "")
        try:
            limit = max(1, min(int(query.get("maxResults", MAX_RESULTS)), MAX_RESULTS))
        except ValueError:
            raise _bad(f"maxResults: {query['maxResults']!r}; accepted: an integer") from None
        items: list[dict[str, Any]] = []
        prefixes: list[str] = []
        last, more = "", False
        for name in sorted(self._names(root)):
            if not name.startswith(prefix) or name <= after:
                continue
            cut = name.find(delimiter, len(prefix)) if delimiter else -1
            collapsed = name[: cut + len(delimiter)] if cut >= 0 else None
            if collapsed is not None and (collapsed <= after or collapsed in prefixes[-1:]):
                continue
            if len(items) + len(prefixes) >= limit:
                more = True
                break
            if collapsed is not None:
                prefixes.append(collapsed)
                last = collapsed
            else:
                items.append(self._describe(bucket, name, root / name, hashes=False))
                last = name
        answer: dict[str, Any] = {"kind": "storage#objects", "items": items}
        if prefixes:
            answer["prefixes"] = prefixes
        if more:
            answer["nextPageToken"] = last  # the next page starts after this name or prefix
        return answer

    def _names(self, root: Path) -> Iterator[str]:
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            rel = os.path.relpath(folder, root)
            for file in files:
                if file.startswith(".") and file.endswith(".partial"):
                    continue  # a write in progress (trainpool.images.storage, uploads)
                name = file if rel == "." else f"{rel}/{file}".replace(os.sep, "/")
                if gcs.object_problem(name) is None:
                    yield name

    def delete_object(self, bucket: str, name: str) -> None:
        self.bucket_resource(bucket)
        path = self.object_path(bucket, name)
        try:
            if not path.is_file():
                raise FileNotFoundError(path)
            path.unlink()
        except FileNotFoundError:
            raise _not_found(f"No such object: {bucket}/{name}") from None

    # uploads: whole, then renamed into place
    def _check_precondition(self, path: Path, query: dict[str, str]) -> None:
        if query.get("ifGenerationMatch") == "0" and path.exists():
            raise ApiError(
                412,
                "At least one of the pre-conditions you specified did not hold.",
                "conditionNotMet",
            )

    def _partial(self) -> Path:
        self.uploads_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self.uploads_dir / f"{secrets.token_hex(16)}.partial"

    def _commit(self, bucket: str, name: str, partial: Path) -> dict[str, Any]:
        path = self.object_path(bucket, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            partial.unlink(missing_ok=True)
            raise ApiError(409, f"{bucket}/{name} is a folder in the local store", "conflict")
        os.replace(partial, path)
        return self._describe(bucket, name, path, hashes=True)

    def put_object(
        self, bucket: str, name: str, data: bytes, query: dict[str, str]
    ) -> dict[str, Any]:
        self.bucket_resource(bucket)
        path = self.object_path(bucket, name)
        self._check_precondition(path, query)
        partial = self._partial()
        partial.write_bytes(data)
        return self._commit(bucket, name, partial)

    def start_upload(self, bucket: str, name: str, query: dict[str, str]) -> str:
        self.bucket_resource(bucket)
        path = self.object_path(bucket, name)
        self._check_precondition(path, query)
        upload_id = secrets.token_urlsafe(24)
        partial = self._partial()
        partial.touch(mode=0o600)
        with self._lock:
            self._uploads[upload_id] = _Upload(bucket, name, partial)
        return upload_id

    def continue_upload(
        self, upload_id: str, content_range: str, data: bytes
    ) -> tuple[int, dict[str, Any] | None]:
        """``(received, None)`` while the upload goes on, ``(size, object)`` once it is whole."""
        with self._lock:
            upload = self._uploads.get(upload_id)
        if upload is None:
            raise _not_found(f"upload_id: {upload_id!r}: no such resumable upload session")
        match = _CONTENT_RANGE.match(content_range.strip()) if content_range else None
        if content_range and match is None:
            raise _bad(
                f"Content-Range: {content_range!r}; accepted: bytes A-B/TOTAL, bytes */TOTAL"
            )
        first = int(match.group(1)) if match and match.group(1) else None
        total = match.group(3) if match else str(upload.received + len(data))
        if data:
            if first is None:
                first = upload.received
            if first != upload.received:
                raise _bad(
                    f"Content-Range: {content_range!r} starts at {first}, "
                    f"accepted: the next byte, {upload.received}"
                )
            with upload.partial.open("ab") as handle:
                handle.write(data)
            upload.received += len(data)
        if total != "*" and int(total) == upload.received:
            with self._lock:
                self._uploads.pop(upload_id, None)
            return upload.received, self._commit(upload.bucket, upload.name, upload.partial)
        return upload.received, None

    def close(self) -> None:
        with self._lock:
            for upload in self._uploads.values():
                upload.partial.unlink(missing_ok=True)
            self._uploads.clear()


def _multipart(content_type: str, body: bytes) -> tuple[dict[str, Any], bytes]:
    """The JSON metadata and the media of a ``multipart/related`` upload body."""
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if match is None:
        raise _bad(f"Content-Type: {content_type!r}; accepted: multipart/related; boundary=...")
    delimiter = b"--" + match.group(1).encode()
    parts = []
    for part in body.split(delimiter)[1:]:
        if part.startswith(b"--"):
            break
        head, _, content = part.partition(b"\r\n\r\n")
        parts.append(content[:-2] if content.endswith(b"\r\n") else content)
    if len(parts) != 2:
        raise _bad("a multipart upload has two parts: the JSON metadata, then the media")
    try:
        return json.loads(parts[0] or b"{}"), parts[1]
    except ValueError:
        raise _bad("the first part of a multipart upload is JSON metadata") from None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: StorageServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    # plumbing
    def _body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                return self._chunked()
            return b""
        return self.rfile.read(int(length))

    def _chunked(self) -> bytes:
        out = bytearray()
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(out)
            out += self.rfile.read(size)
            self.rfile.readline()

    def _send(
        self,
        status: int,
        body: bytes = b"",
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if body or status not in (204, 304):
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(
        self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self._send(status, json.dumps(data).encode(), headers=headers)

    def _route(self) -> tuple[list[str], dict[str, str]]:
        raw = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(raw.query, keep_blank_values=True).items()}
        return raw.path.split("/"), query

    def _dispatch(self) -> None:
        store = self.server.store
        if not store.base_url:
            store.base_url = self.server.address
        try:
            body = self._body()
            parts, query = self._route()
            self._answer(store, parts, query, body)
        except ApiError as err:
            error = {
                "code": err.status,
                "message": err.message,
                "errors": [{"message": err.message, "domain": "global", "reason": err.reason}],
            }
            self._json(err.status, {"error": error})

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _dispatch  # noqa: N815

    def _answer(self, store: Store, parts: list[str], query: dict[str, str], body: bytes) -> None:
        method = self.command
        # parts of "/storage/v1/b/B/o/O": ["", "storage", "v1", "b", "B", "o", "O"]
        kind = parts[1] if len(parts) > 1 else ""
        rest = (
            parts[2:] if kind == "storage" else parts[3:] if kind in ("upload", "download") else []
        )
        if kind in ("upload", "download") and parts[2:3] != ["storage"]:
            rest = []
        if rest[:1] != ["v1"] or rest[1:2] != ["b"]:
            raise ApiError(
                501, f"{method} {self.path}: not served by the local store", "notImplemented"
            )
        rest = rest[2:]
        if kind == "storage" and not rest and method == "POST":
            self._json(200, store.create_bucket(self._load(body)))
            return
        bucket = unquote(rest[0]) if rest else ""
        if kind == "upload" and rest[1:] == ["o"]:
            self._upload(store, bucket, query, body)
            return
        if len(rest) == 1 and method == "GET":
            self._json(200, store.bucket_resource(bucket))
            return
        if rest[1:] == ["iam"] and method in ("GET", "PUT"):
            store.bucket_resource(bucket)
            policy = self._load(body) if method == "PUT" else {"bindings": []}
            policy.update(
                kind="storage#policy",
                resourceId=f"projects/_/buckets/{bucket}",
                version=policy.get("version", 1),
                etag="CAE=",
            )
            self._json(200, policy)
            return
        if rest[1:] == ["o"] and method == "GET":
            self._json(200, store.list_objects(bucket, query))
            return
        if rest[1:2] == ["o"] and len(rest) > 2:
            name = unquote("/".join(rest[2:]))
            if method == "GET" and (kind == "download" or query.get("alt") == "media"):
                self._download(store, bucket, name)
                return
            if method == "GET" and kind == "storage":
                self._json(200, store.object_resource(bucket, name))
                return
            if method == "DELETE" and kind == "storage":
                store.delete_object(bucket, name)
                self._send(204)
                return
        raise ApiError(
            501, f"{method} {self.path}: not served by the local store", "notImplemented"
        )

    @staticmethod
    def _load(body: bytes) -> dict[str, Any]:
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            raise _bad("the request body is not JSON") from None
        if not isinstance(data, dict):
            raise _bad("the request body is a JSON object")
        return data

    def _upload(self, store: Store, bucket: str, query: dict[str, str], body: bytes) -> None:
        kind = query.get("uploadType", "")
        if self.command == "PUT" and query.get("upload_id"):
            received, done = store.continue_upload(
                query["upload_id"], self.headers.get("Content-Range", ""), body
            )
            if done is not None:
                self._json(200, done)
            else:
                ranged = {"Range": f"bytes=0-{received - 1}"} if received else {}
                self._send(308, headers=ranged)
            return
        if self.command != "POST":
            raise ApiError(501, f"{self.command} {self.path}: not served", "notImplemented")
        if kind == "media":
            self._json(200, store.put_object(bucket, query.get("name", ""), body, query))
        elif kind == "multipart":
            meta, media = _multipart(self.headers.get("Content-Type", ""), body)
            name = str(meta.get("name") or query.get("name", ""))
            self._json(200, store.put_object(bucket, name, media, query))
        elif kind == "resumable":
            meta = self._load(body)
            name = str(meta.get("name") or query.get("name", ""))
            upload_id = store.start_upload(bucket, name, query)
            location = (
                f"{self.server.address}/upload/storage/v1/b/{quote(bucket, safe='')}/o"
                f"?uploadType=resumable&upload_id={upload_id}"
            )
            self._send(200, headers={"Location": location})
        else:
            raise _bad(f"uploadType: {kind!r}; accepted: media, multipart, resumable")

    def _download(self, store: Store, bucket: str, name: str) -> None:
        resource = store.object_resource(bucket, name)
        path = store.object_path(bucket, name)
        data = path.read_bytes()
        status, headers = (
            200,
            {
                "x-goog-generation": resource["generation"],
                "x-goog-stored-content-length": str(len(data)),
            },
        )
        spec = self.headers.get("Range", "")
        match = _RANGE.match(spec.strip()) if spec else None
        if match and (match.group(1) or match.group(2)):
            size = len(data)
            if match.group(1):
                first = int(match.group(1))
                last = min(int(match.group(2)), size - 1) if match.group(2) else size - 1
            else:
                first, last = max(0, size - int(match.group(2))), size - 1
            if first >= size and size:
                raise ApiError(
                    416,
                    f"Range: {spec!r} is past the object's {size} bytes",
                    "requestedRangeNotSatisfiable",
                )
            data = data[first : last + 1]
            status = 206
            headers["Content-Range"] = f"bytes {first}-{last}/{size}"
        else:
            hashes = [f"md5={resource['md5Hash']}"]
            if "crc32c" in resource:
                hashes.insert(0, f"crc32c={resource['crc32c']}")
            headers["x-goog-hash"] = ",".join(hashes)
        self._send(status, data, resource["contentType"], headers)


class StorageServer(ThreadingHTTPServer):
    """The JSON API door of one store, on ``127.0.0.1``; ``address`` is ``http://127.0.0.1:PORT``."""

    daemon_threads = True

    def __init__(self, root: Path, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.address = f"http://127.0.0.1:{self.server_address[1]}"
        self.store = Store(root / "gcs", root / UPLOADS_DIR, self.address)
        self._thread = threading.Thread(
            target=self.serve_forever, name="storage-json-api", daemon=True
        )

    def start(self) -> StorageServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.store.close()


def serve(root: Path, port: int = 0) -> StorageServer:
    """Serve ``<root>/gcs`` through the JSON API on ``127.0.0.1:port`` (0: a free port)."""
    return StorageServer(root, port).start()
