"""The Cloud Storage JSON API's requests the door serves: a route table, one handler each.

Served (the subset google-cloud-storage 3.x uses, https://cloud.google.com/storage/docs/json_api):
bucket insert, list and get, bucket IAM get and set (answered, not kept), object get, media
download (``Range`` too), list (``prefix``, ``delimiter``, ``maxResults``, ``pageToken``),
upload (``uploadType=media|multipart|resumable``, the resumable session's PUTs) and
delete. A request no route matches answers 501 naming it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from trainpool.emulator.cloud_storage.objects import (
    ApiError,
    Objects,
    bad,
    not_found,
    not_served,
)
from trainpool.emulator.cloud_storage.uploads import Uploads
from trainpool.errors import InputError
from trainpool.spec.safe_load import load_json

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


@dataclass
class Request:
    """What a route handler sees: the method, the path's parts, the query, headers, body."""

    method: str
    path: str
    query: dict[str, str]
    headers: Any
    body: bytes
    address: str
    """The door's own ``http://127.0.0.1:PORT`` (for upload session URLs)."""


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, data: dict[str, Any], status: int = 200, **headers: str) -> Response:
        return cls(status, json.dumps(data).encode(), headers=dict(headers))


@dataclass(frozen=True)
class Store:
    """What the routes serve: the store's objects (reads) and its uploads (writes)."""

    objects: Objects
    uploads: Uploads


Handler = Callable[[Store, Request, dict[str, str]], Response]


def _load(body: bytes) -> dict[str, Any]:
    try:
        data = load_json(body or b"{}", "body")
    except InputError as err:
        raise bad(f"the request body is not JSON: {err}") from None
    if not isinstance(data, dict):
        raise bad("the request body is a JSON object")
    return data


def create_bucket(store: Store, request: Request, _: dict[str, str]) -> Response:
    return Response.json(store.objects.create_bucket(_load(request.body)))


def list_buckets(store: Store, request: Request, _: dict[str, str]) -> Response:
    return Response.json(store.objects.list_buckets())


def get_bucket(store: Store, request: Request, match: dict[str, str]) -> Response:
    return Response.json(store.objects.bucket_resource(match["bucket"]))


def bucket_iam(store: Store, request: Request, match: dict[str, str]) -> Response:
    bucket = match["bucket"]
    store.objects.bucket_resource(bucket)
    policy = _load(request.body) if request.method == "PUT" else {"bindings": []}
    policy.update(
        kind="storage#policy",
        resourceId=f"projects/_/buckets/{bucket}",
        version=policy.get("version", 1),
        etag="CAE=",
    )
    return Response.json(policy)


def list_objects(store: Store, request: Request, match: dict[str, str]) -> Response:
    return Response.json(store.objects.list_objects(match["bucket"], request.query))


def get_object(store: Store, request: Request, match: dict[str, str]) -> Response:
    if match["object"].endswith("/"):  # a "folder" gcloud looks up: never an object here
        raise not_found(f"No such object: {match['bucket']}/{match['object']}")
    if request.query.get("alt") == "media":
        return download(store, request, match)
    if match["object"].endswith("/"):
        # `gcloud storage ls gs://B/DIR/` first asks for a placeholder object "DIR/"; the
        # local store never holds one (an object is a file)
        raise not_found(f"No such object: {match['bucket']}/{match['object']}")
    return Response.json(store.objects.object_resource(match["bucket"], match["object"]))


def delete_object(store: Store, request: Request, match: dict[str, str]) -> Response:
    store.objects.delete_object(match["bucket"], match["object"])
    return Response(204)


def download(store: Store, request: Request, match: dict[str, str]) -> Response:
    bucket, name = match["bucket"], match["object"]
    resource = store.objects.object_resource(bucket, name)
    data = store.objects.object_path(bucket, name).read_bytes()
    headers = {
        "x-goog-generation": resource["generation"],
        "x-goog-stored-content-length": str(len(data)),
    }
    spec = request.headers.get("Range", "")
    found = _RANGE.match(spec.strip()) if spec else None
    if not (found and (found.group(1) or found.group(2))):
        hashes = [f"md5={resource['md5Hash']}"]
        if "crc32c" in resource:
            hashes.insert(0, f"crc32c={resource['crc32c']}")
        headers["x-goog-hash"] = ",".join(hashes)
        return Response(200, data, resource["contentType"], headers)
    size = len(data)
    if found.group(1):
        first = int(found.group(1))
        last = min(int(found.group(2)), size - 1) if found.group(2) else size - 1
    else:
        first, last = max(0, size - int(found.group(2))), size - 1
    if first >= size and size:
        raise ApiError(
            416,
            f"Range: {spec!r} is past the object's {size} bytes",
            "requestedRangeNotSatisfiable",
        )
    headers["Content-Range"] = f"bytes {first}-{last}/{size}"
    return Response(206, data[first : last + 1], resource["contentType"], headers)


def multipart(content_type: str, body: bytes) -> tuple[dict[str, Any], bytes]:
    """The JSON metadata and the media of a ``multipart/related`` upload body."""
    found = re.search(r'boundary="?([^";]+)"?', content_type)
    if found is None:
        raise bad(f"Content-Type: {content_type!r}; accepted: multipart/related; boundary=...")
    delimiter = b"--" + found.group(1).encode()
    parts = []
    for part in body.split(delimiter)[1:]:
        if part.startswith(b"--"):
            break
        _, _, content = part.partition(b"\r\n\r\n")
        parts.append(content[:-2] if content.endswith(b"\r\n") else content)
    if len(parts) != 2:
        raise bad("a multipart upload has two parts: the JSON metadata, then the media")
    try:
        metadata = load_json(parts[0] or b"{}", "metadata")
    except InputError:
        raise bad("the first part of a multipart upload is JSON metadata") from None
    if not isinstance(metadata, dict):
        raise bad("the first part of a multipart upload is a JSON object")
    return metadata, parts[1]


def upload(store: Store, request: Request, match: dict[str, str]) -> Response:
    bucket, query = match["bucket"], request.query
    kind = query.get("uploadType", "")
    if kind == "media":
        return Response.json(
            store.uploads.put_object(bucket, query.get("name", ""), request.body, query)
        )
    if kind == "multipart":
        meta, media = multipart(request.headers.get("Content-Type", ""), request.body)
        name = str(meta.get("name") or query.get("name", ""))
        return Response.json(store.uploads.put_object(bucket, name, media, query))
    if kind == "resumable":
        meta = _load(request.body)
        name = str(meta.get("name") or query.get("name", ""))
        upload_id = store.uploads.start_upload(bucket, name, query)
        location = (
            f"{request.address}/upload/storage/v1/b/{quote(bucket, safe='')}/o"
            f"?uploadType=resumable&upload_id={upload_id}"
        )
        return Response(200, headers={"Location": location})
    raise bad(f"uploadType: {kind!r}; accepted: media, multipart, resumable")


def continue_upload(store: Store, request: Request, _: dict[str, str]) -> Response:
    upload_id = request.query.get("upload_id", "")
    if not upload_id:
        raise not_served(request)
    received, done = store.uploads.continue_upload(
        upload_id, request.headers.get("Content-Range", ""), request.body
    )
    if done is not None:
        return Response.json(done)
    return Response(308, headers={"Range": f"bytes=0-{received - 1}"} if received else {})


_B = r"/b/(?P<bucket>[^/]+)"
_O = r"/o/(?P<object>.+)"
ROUTES: list[tuple[tuple[str, ...], re.Pattern[str], Handler]] = [
    (("POST",), re.compile(r"^/storage/v1/b$"), create_bucket),
    (("GET",), re.compile(r"^/storage/v1/b$"), list_buckets),
    (("GET",), re.compile(rf"^/storage/v1{_B}$"), get_bucket),
    (("GET", "PUT"), re.compile(rf"^/storage/v1{_B}/iam$"), bucket_iam),
    (("GET",), re.compile(rf"^/storage/v1{_B}/o$"), list_objects),
    (("GET",), re.compile(rf"^/storage/v1{_B}{_O}$"), get_object),
    (("DELETE",), re.compile(rf"^/storage/v1{_B}{_O}$"), delete_object),
    (("GET",), re.compile(rf"^/download/storage/v1{_B}{_O}$"), download),
    (("POST",), re.compile(rf"^/upload/storage/v1{_B}/o$"), upload),
    (("PUT",), re.compile(rf"^/upload/storage/v1{_B}/o$"), continue_upload),
]
"""``(methods, path pattern, handler)``; the first that matches serves the request. Path
parts are matched as sent (percent-encoded) and decoded after matching."""


def route(request: Request) -> tuple[Handler, dict[str, str]] | None:
    """The handler of ``request`` and its path's named parts (decoded), or None."""
    for methods, pattern, handler in ROUTES:
        found = pattern.match(request.path)
        if found is not None and request.method in methods:
            return handler, {key: unquote(value) for key, value in found.groupdict().items()}
    return None
