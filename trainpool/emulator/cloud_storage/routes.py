"""The Cloud Storage JSON API's requests the door serves: a route table, one handler each.

Served (the subset google-cloud-storage 3.x, ``gcloud storage`` and gsutil use,
https://cloud.google.com/storage/docs/json_api): bucket insert, list, get and delete (an empty
bucket only: 409 otherwise, :meth:`.Objects.delete_bucket`), its storage layout (flat: what
``gcloud storage rm -r gs://BUCKET`` asks before it deletes the bucket) and its managed folders
(none: it lists them too), bucket IAM get and set (answered, not kept), object get, media
download (one ``Range`` too), list (``prefix``, ``delimiter``, ``maxResults``, ``pageToken``),
upload (``uploadType=media|multipart|resumable``, on ``/upload/...`` and gcloud's
``/resumable/upload/...``, the resumable session's PUTs and status queries; bodies in every
framing, :mod:`.bodies`), compose (gcloud's parallel composite uploads), rewrite and copy
(TensorFlow's renames) and delete. A
request no route matches answers 501 naming it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from trainpool.emulator.cloud_storage.bodies import Body
from trainpool.emulator.cloud_storage.multipart import Multipart
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

_RANGE = re.compile(r"^bytes=(\d{0,19})-(\d{0,19})$")
_RANGES = "accepted: bytes=FIRST-LAST, bytes=FIRST- or bytes=-SUFFIX (one range)"


@dataclass
class Request:
    """What a route handler sees: the method, the path (the door's secret taken off), the
    query, headers, the body (read as it arrives) and the door's own address."""

    method: str
    path: str
    query: dict[str, str]
    headers: Any
    body: Body
    address: str
    """The door's ``http://127.0.0.1:PORT/<secret>`` (for links and upload session URLs)."""


@dataclass
class Response:
    """An answer: ``body``, or ``length`` bytes of the file ``file`` from ``offset`` (sent in
    chunks, never read whole)."""

    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    file: Path | None = None
    offset: int = 0
    length: int = 0

    @classmethod
    def json(cls, data: dict[str, Any], status: int = 200, **headers: str) -> Response:
        return cls(status, json.dumps(data).encode(), headers=dict(headers))


@dataclass(frozen=True)
class Served:
    """What the routes serve: the local store's objects (reads) and its uploads (writes)."""

    objects: Objects
    uploads: Uploads


Handler = Callable[[Served, Request, dict[str, str]], Response]


def _load(body: Body) -> dict[str, Any]:
    try:
        data = load_json(body.read() or b"{}", "body")
    except InputError as err:
        raise bad(f"the request body is not JSON: {err}") from None
    if not isinstance(data, dict):
        raise bad("the request body is a JSON object")
    return data


def create_bucket(served: Served, request: Request, _: dict[str, str]) -> Response:
    return Response.json(served.objects.create_bucket(_load(request.body)))


def get_bucket(served: Served, request: Request, match: dict[str, str]) -> Response:
    return Response.json(served.objects.bucket_resource(match["bucket"]))


def delete_bucket(served: Served, request: Request, match: dict[str, str]) -> Response:
    served.objects.delete_bucket(match["bucket"], request.query)
    return Response(204)


def storage_layout(served: Served, request: Request, match: dict[str, str]) -> Response:
    """``buckets.getStorageLayout``: a flat namespace, never hierarchical here
    (https://cloud.google.com/storage/docs/json_api/v1/buckets/getStorageLayout)."""
    bucket = served.objects.bucket_resource(match["bucket"])
    layout = {
        "kind": "storage#storageLayout",
        "bucket": bucket["name"],
        "location": bucket["location"],
        "locationType": bucket["locationType"],
        "hierarchicalNamespace": {"enabled": False},
    }
    return Response.json(layout)


def list_managed_folders(served: Served, request: Request, match: dict[str, str]) -> Response:
    """``managedFolders.list``: the local store has no managed folders (IAM on a prefix), so
    none (https://cloud.google.com/storage/docs/json_api/v1/managedFolder/list)."""
    served.objects.bucket_resource(match["bucket"])
    return Response.json({"kind": "storage#managedFolders", "items": []})


def bucket_iam(served: Served, request: Request, match: dict[str, str]) -> Response:
    bucket = match["bucket"]
    served.objects.bucket_resource(bucket)
    policy = _load(request.body) if request.method == "PUT" else {"bindings": []}
    policy.update(
        kind="storage#policy",
        resourceId=f"projects/_/buckets/{bucket}",
        version=policy.get("version", 1),
        etag="CAE=",
    )
    return Response.json(policy)


def list_objects(served: Served, request: Request, match: dict[str, str]) -> Response:
    return Response.json(served.objects.list_objects(match["bucket"], request.query))


def list_buckets(served: Served, request: Request, _: dict[str, str]) -> Response:
    return Response.json(served.objects.list_buckets())


def get_object(served: Served, request: Request, match: dict[str, str]) -> Response:
    if match["object"].endswith("/"):  # a "folder" gcloud looks up: never an object here
        raise not_found(f"No such object: {match['bucket']}/{match['object']}")
    if request.query.get("alt") == "media":
        return download(served, request, match)
    return Response.json(served.objects.object_resource(match["bucket"], match["object"]))


def compose(served: Served, request: Request, match: dict[str, str]) -> Response:
    sources = _load(request.body).get("sourceObjects")
    if not isinstance(sources, list) or not all(
        isinstance(s, dict) and isinstance(s.get("name"), str) for s in sources
    ):
        raise bad('sourceObjects: accepted: a list of {"name": OBJECT}')
    names = [str(source["name"]) for source in sources]
    done = served.uploads.compose(match["bucket"], match["object"], names, request.query)
    return Response.json(done)


def rewrite(served: Served, request: Request, match: dict[str, str]) -> Response:
    """``objects.rewrite`` and ``objects.copy``: the copy is made in one call, so a rewrite
    answers ``done`` with the new object (https://cloud.google.com/storage/docs/json_api/v1/
    objects/rewrite), a copy the object itself (.../objects/copy)."""
    source = (match["bucket"], match["object"])
    done = served.uploads.copy(source, match["to_bucket"], match["to_object"], request.query)
    if match["verb"] == "copyTo":
        return Response.json(done)
    size = done["size"]
    answer = {
        "kind": "storage#rewriteResponse",
        "totalBytesRewritten": size,
        "objectSize": size,
        "done": True,
        "resource": done,
    }
    return Response.json(answer)


def delete_object(served: Served, request: Request, match: dict[str, str]) -> Response:
    served.objects.delete_object(match["bucket"], match["object"])
    return Response(204)


def byte_range(spec: str, size: int) -> tuple[int, int] | None:
    """``(first, last)`` of a ``Range`` header over ``size`` bytes; None: the whole object.

    A header that is not one ``bytes=`` range answers 400; a range past the end, 416
    (https://cloud.google.com/storage/docs/json_api/v1/objects/get, RFC 9110 14.1.2).
    """
    if not spec.strip():
        return None
    found = _RANGE.match(spec.strip())
    if found is None or not (found.group(1) or found.group(2)):
        raise bad(f"Range: {spec!r}; {_RANGES}")
    head, tail = found.groups()
    if head and tail and int(tail) < int(head):
        raise bad(f"Range: {spec!r}: LAST is before FIRST; {_RANGES}")
    if size == 0:
        return None
    if head:
        first = int(head)
        last = min(int(tail), size - 1) if tail else size - 1
    else:
        first, last = max(0, size - int(tail)), size - 1
    if first >= size or (not head and int(tail) == 0):
        raise ApiError(
            416,
            f"Range: {spec!r} is past the object's {size} bytes",
            "requestedRangeNotSatisfiable",
        )
    return first, last


def download(served: Served, request: Request, match: dict[str, str]) -> Response:
    bucket, name = match["bucket"], match["object"]
    path = served.objects.object_path(bucket, name)
    span = byte_range(
        request.headers.get("Range", ""), path.stat().st_size if path.is_file() else 0
    )
    resource = served.objects.object_resource(bucket, name, hashes=span is None)
    size = int(resource["size"])
    headers = {
        "x-goog-generation": resource["generation"],
        "x-goog-stored-content-length": str(size),
    }
    if span is None:
        hashes = [f"md5={resource['md5Hash']}"]
        if "crc32c" in resource:
            hashes.insert(0, f"crc32c={resource['crc32c']}")
        headers["x-goog-hash"] = ",".join(hashes)
        return Response(
            200, content_type=resource["contentType"], headers=headers, file=path, length=size
        )
    first, last = span
    headers["Content-Range"] = f"bytes {first}-{last}/{size}"
    return Response(
        206,
        content_type=resource["contentType"],
        headers=headers,
        file=path,
        offset=first,
        length=last - first + 1,
    )


def upload(served: Served, request: Request, match: dict[str, str]) -> Response:
    bucket, query = match["bucket"], request.query
    kind = query.get("uploadType", "")
    if kind == "media":
        pieces = request.body.chunks()
        return Response.json(
            served.uploads.put_object(bucket, query.get("name", ""), pieces, query)
        )
    if kind == "multipart":
        parts = Multipart(request.headers.get("Content-Type", ""), request.body)
        name = str(parts.metadata().get("name") or query.get("name", ""))
        return Response.json(served.uploads.put_object(bucket, name, parts.media(), query))
    if kind == "resumable":
        meta = _load(request.body)
        name = str(meta.get("name") or query.get("name", ""))
        declared = request.headers.get("X-Upload-Content-Length")
        upload_id = served.uploads.start_upload(bucket, name, query, declared)
        location = (
            f"{request.address}/upload/storage/v1/b/{quote(bucket, safe='')}/o"
            f"?uploadType=resumable&upload_id={upload_id}"
        )
        return Response(200, headers={"Location": location})
    raise bad(f"uploadType: {kind!r}; accepted: media, multipart, resumable")


def continue_upload(served: Served, request: Request, _: dict[str, str]) -> Response:
    upload_id = request.query.get("upload_id", "")
    if not upload_id:
        raise not_served(request)
    received, done = served.uploads.continue_upload(
        upload_id, request.headers.get("Content-Range", ""), request.body.chunks()
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
    (("DELETE",), re.compile(rf"^/storage/v1{_B}$"), delete_bucket),
    (("GET",), re.compile(rf"^/storage/v1{_B}/storageLayout$"), storage_layout),
    (("GET",), re.compile(rf"^/storage/v1{_B}/managedFolders$"), list_managed_folders),
    (("GET", "PUT"), re.compile(rf"^/storage/v1{_B}/iam$"), bucket_iam),
    (("GET",), re.compile(rf"^/storage/v1{_B}/o$"), list_objects),
    (("POST",), re.compile(rf"^/storage/v1{_B}{_O}/compose$"), compose),
    (
        ("POST",),
        re.compile(
            rf"^/storage/v1{_B}/o/(?P<object>[^/]+)/(?P<verb>rewriteTo|copyTo)"
            r"/b/(?P<to_bucket>[^/]+)/o/(?P<to_object>.+)$"
        ),
        rewrite,
    ),
    (("GET",), re.compile(rf"^/storage/v1{_B}{_O}$"), get_object),
    (("DELETE",), re.compile(rf"^/storage/v1{_B}{_O}$"), delete_object),
    (("GET",), re.compile(rf"^/download/storage/v1{_B}{_O}$"), download),
    (("POST",), re.compile(rf"^(?:/resumable)?/upload/storage/v1{_B}/o$"), upload),
    (("PUT",), re.compile(rf"^(?:/resumable)?/upload/storage/v1{_B}/o$"), continue_upload),
    # storage.googleapis.com/BUCKET/OBJECT: an object by path (the XML API's GET), what
    # gcloud builds submit reads a build's log with (googlecloudsdk/api_lib/cloudbuild/logs.py);
    # never a JSON API path the table lacks (that answers 501 naming it)
    (
        ("GET",),
        re.compile(
            r"^/(?!(?:storage|upload|download|resumable/upload)/v1/)"
            r"(?P<bucket>[a-z0-9][a-z0-9._-]{1,221})/(?P<object>[^?]+)$"
        ),
        download,
    ),
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
