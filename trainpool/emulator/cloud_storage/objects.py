"""Cloud Storage's buckets and objects, as the local store keeps them: folders and files.

The object ``gs://BUCKET/OBJECT`` is the file ``<root>/gcs/BUCKET/OBJECT``. Every name
goes through :mod:`trainpool.cluster_env.gcs` (a name it refuses answers 400 with the
rule), and every path is checked again once its symbolic links are resolved (one that
leads out of ``<root>/gcs`` answers 403, and a listing skips it), so no request reaches a
path outside the store. There is no side store of
metadata: size, ``md5Hash``, ``crc32c``, ``updated`` and ``generation`` (the file's
``st_mtime_ns``) are read from the file, ``contentType`` is guessed from the name, so an
object written by path or at ``/gcs`` is served at once. Writes are :mod:`.uploads`.
"""

from __future__ import annotations

import base64
import datetime
import errno
import hashlib
import mimetypes
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from trainpool.cluster_env import gcs

MAX_RESULTS = 1000
_CHUNK = 1 << 20
NOT_EMPTY = "The bucket you tried to delete is not empty."
"""Cloud Storage's own words for a bucket that still holds objects (409,
https://cloud.google.com/storage/docs/xml-api/delete-bucket: ``BucketNotEmpty``)."""
_METAGENERATION = "1"
"""Every bucket's ``metageneration`` here: its metadata is never changed."""


class ApiError(Exception):
    """An answer other than success: HTTP status, message, JSON API ``reason``."""

    def __init__(self, status: int, message: str, reason: str = "invalid") -> None:
        super().__init__(message)
        self.status, self.message, self.reason = status, message, reason


def bad(message: str) -> ApiError:
    return ApiError(400, message, "invalid")


def not_found(message: str) -> ApiError:
    return ApiError(404, message, "notFound")


def not_served(request: Any) -> ApiError:
    """501 for a request the door does not serve (``request`` has ``method`` and ``path``)."""
    return ApiError(
        501, f"{request.method} {request.path}: not served by the local store", "notImplemented"
    )


def _rfc3339(seconds: float) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode("ascii")


def file_hashes(path: Path) -> dict[str, str]:
    """``md5Hash`` and ``crc32c`` of the file (base64, as the JSON API gives them), one read."""
    md5 = hashlib.md5(usedforsecurity=False)
    try:
        import google_crc32c

        crc: Any = google_crc32c.Checksum()
    except ImportError:  # pragma: no cover - installed with google-cloud-storage
        crc = None
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            md5.update(chunk)
            if crc is not None:
                crc.update(chunk)
    found = {"md5Hash": _b64(md5.digest())}
    if crc is not None:
        found["crc32c"] = _b64(crc.digest())
    return found


class Objects:
    """Buckets and objects of ``<root>/gcs``, by Cloud Storage names; ``base_url`` is the door's
    own address, for the links in resources."""

    def __init__(self, gcs_root: Path, base_url: str = "") -> None:
        self.gcs_root = gcs_root
        self.base_url = base_url

    def inside(self, path: Path) -> bool:
        """Whether ``path``, every link in it followed, is in the store (``<root>/gcs``)."""
        real, root = path.resolve(), self.gcs_root.resolve()
        return real == root or root in real.parents

    def _kept_inside(self, path: Path, uri: str) -> Path:
        """``path`` when it stays in the store once its links are followed; else 403.

        Names are checked before they become paths (:mod:`trainpool.cluster_env.gcs`), but a
        symbolic link inside ``<root>/gcs`` could still lead out: every read, write, listing
        and delete is checked after resolution.
        """
        if not self.inside(path):
            raise ApiError(
                403,
                f"{uri}: a symbolic link in the local store leads outside it; "
                "accepted: objects whose path stays inside <root>/gcs",
                "forbidden",
            )
        return path

    # names -> paths, only through cluster_env.gcs
    def bucket_path(self, bucket: str) -> Path:
        problem = gcs.bucket_problem(bucket)  # a '/' in it too: never a folder of a bucket
        if problem is not None:
            raise bad(
                f"bucket: {bucket!r}: {problem}; accepted: a bucket named by Cloud Storage's "
                "rules (https://cloud.google.com/storage/docs/buckets#naming)"
            )
        path = Path(gcs.to_path(gcs.SCHEME + bucket + "/", self.gcs_root, "bucket"))
        return self._kept_inside(path, gcs.SCHEME + bucket)

    def object_path(self, bucket: str, name: str) -> Path:
        uri = f"{gcs.SCHEME}{bucket}/{name}"
        if not name or name.endswith("/"):
            raise bad(
                f"object: {uri!r}: the local store maps an object to a file; "
                "accepted: a name that does not end in '/'"
            )
        try:
            path = Path(gcs.to_path(uri, self.gcs_root, "object"))
        except gcs.GcsUriError as err:
            raise bad(str(err)) from None
        return self._kept_inside(path, uri)

    def folder_path(self, bucket: str, name: str) -> Path:
        """The folder a name ending in ``/`` maps to (a "folder marker": an empty object that
        TensorFlow's ``CreateDir``, gsutil and the console write for a folder)."""
        uri = f"{gcs.SCHEME}{bucket}/{name}"
        try:
            path = Path(gcs.to_path(uri, self.gcs_root, "object"))
        except gcs.GcsUriError as err:
            raise bad(str(err)) from None
        return self._kept_inside(path, uri)

    def describe_folder(self, bucket: str, name: str, path: Path) -> dict[str, Any]:
        """The resource of the folder marker ``name`` (kept as the folder ``path``): empty."""
        resource = self.describe(bucket, name, path, hashes=False)
        resource.update(size="0", md5Hash=_b64(hashlib.md5(b"", usedforsecurity=False).digest()))
        resource.update(crc32c="AAAAAA==")  # CRC32C of no bytes
        return resource

    # resources
    def bucket_resource(self, bucket: str) -> dict[str, Any]:
        path = self.bucket_path(bucket)
        if not path.is_dir():
            raise self.gone(bucket)
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

    def gone(self, bucket: str) -> ApiError:
        return not_found(f"The specified bucket does not exist: {bucket}")

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

    def list_buckets(self) -> dict[str, Any]:
        """Every bucket of the store (a bucket has no project here), by name."""
        names = sorted(
            p.name
            for p in (self.gcs_root.iterdir() if self.gcs_root.is_dir() else [])
            if p.is_dir() and gcs.bucket_problem(p.name) is None
        )
        return {"kind": "storage#buckets", "items": [self.bucket_resource(n) for n in names]}

    def object_resource(self, bucket: str, name: str, hashes: bool = True) -> dict[str, Any]:
        self.bucket_resource(bucket)
        path = self.object_path(bucket, name)
        if not path.is_file():
            raise not_found(f"No such object: {bucket}/{name}")
        return self.describe(bucket, name, path, hashes)

    def describe(self, bucket: str, name: str, path: Path, hashes: bool) -> dict[str, Any]:
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
            resource.update(file_hashes(path))
        return resource

    def list_objects(self, bucket: str, query: dict[str, str]) -> dict[str, Any]:
        root = self.bucket_path(bucket)
        self.bucket_resource(bucket)
        prefix, delimiter = query.get("prefix", ""), query.get("delimiter", "")
        after = query.get("pageToken", "")
        try:
            limit = max(1, min(int(query.get("maxResults", MAX_RESULTS)), MAX_RESULTS))
        except ValueError:
            raise bad(f"maxResults: {query['maxResults']!r}; accepted: an integer") from None
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
                try:
                    items.append(self.describe(bucket, name, root / name, hashes=False))
                except FileNotFoundError:
                    continue  # deleted while listing
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
                if gcs.object_problem(name) is not None:
                    continue
                link = os.path.join(folder, file)
                if os.path.islink(link) and not (os.path.isfile(link) and self.inside(Path(link))):
                    continue  # a link out of the store (or to nothing) is not an object of it
                yield name

    def delete_object(self, bucket: str, name: str) -> None:
        """Delete the object, then the folders it leaves empty (Cloud Storage has none: a
        "folder" is only a shared prefix), up to the bucket."""
        top = self.bucket_path(bucket)
        self.bucket_resource(bucket)
        path = self.object_path(bucket, name)
        try:
            if not path.is_file():
                raise FileNotFoundError(path)
            path.unlink()
        except FileNotFoundError:
            raise not_found(f"No such object: {bucket}/{name}") from None
        folder = path.parent
        while folder != top and top in folder.parents:
            try:
                folder.rmdir()
            except OSError:
                break  # not empty (or gone): the prefix still holds objects
            folder = folder.parent

    def delete_bucket(self, bucket: str, query: dict[str, str]) -> None:
        """Delete an empty bucket, as ``buckets.delete`` does: all or nothing.

        https://cloud.google.com/storage/docs/json_api/v1/buckets/delete: "Permanently deletes
        an empty bucket", an empty response (204), ``ifMetagenerationMatch`` and
        ``ifMetagenerationNotMatch``; a bucket that holds objects answers 409 ``conflict``
        with "The bucket you tried to delete is not empty."
        (https://cloud.google.com/storage/docs/xml-api/delete-bucket, ``BucketNotEmpty``;
        the JSON body's form: https://cloud.google.com/storage/docs/json_api/v1/status-codes),
        one that does not exist 404. Here a bucket is a folder, and it goes only when it holds
        nothing but empty folders: any file (an object, a write in progress, a file whose
        name is no object's, a link) keeps it, answered 409, and nothing is removed. The
        folders go deepest first with ``rmdir``, which removes only an empty folder, so an
        object written meanwhile keeps its bucket (409) instead of being lost.
        """
        top = self.bucket_path(bucket)
        self.bucket_resource(bucket)
        self._check_metageneration(query)
        if top.is_symlink():
            raise ApiError(
                409,
                f"gs://{bucket} is a link in the local store, not a folder of its own; "
                f"accepted: a bucket folder: remove the link <root>/gcs/{bucket} by path",
                "conflict",
            )
        held = self._first_held(top)
        if held is not None:
            raise self._not_empty(bucket, top, held)
        for folder, _, _ in os.walk(top, topdown=False):
            try:
                os.rmdir(folder)
            except FileNotFoundError:
                if folder == str(top):
                    raise self.gone(bucket) from None
            except OSError as err:
                if err.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                raise self._not_empty(bucket, top, self._first_held(top)) from None

    def _check_metageneration(self, query: dict[str, str]) -> None:
        for key, holds in (
            ("ifMetagenerationMatch", lambda v: v == _METAGENERATION),
            ("ifMetagenerationNotMatch", lambda v: v != _METAGENERATION),
        ):
            if key not in query:
                continue
            value = query[key].strip()
            if not value.isascii() or not value.isdigit():
                raise bad(f"{key}: {query[key]!r}; accepted: a metageneration, a number")
            if not holds(str(int(value))):
                raise ApiError(
                    412,
                    "At least one of the pre-conditions you specified did not hold "
                    f"({key}={value}; the bucket's metageneration is {_METAGENERATION}).",
                    "conditionNotMet",
                )

    @staticmethod
    def _first_held(top: Path) -> str | None:
        """The first thing in the bucket folder ``top`` that is not a folder (relative), or
        None when it holds only (empty) folders. Links are not followed: one is held."""
        for folder, dirs, files in os.walk(top):
            dirs.sort()
            links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
            for name in sorted(files + links):
                return os.path.relpath(os.path.join(folder, name), top).replace(os.sep, "/")
        return None

    def _not_empty(self, bucket: str, top: Path, held: str | None) -> ApiError:
        if held is None or any(name == held for name in self._names(top)):
            return ApiError(409, NOT_EMPTY, "conflict")
        return ApiError(
            409,
            f"{NOT_EMPTY} The local store holds {held!r} in it, which is not an object (a "
            "write in progress, a link, or a name Cloud Storage refuses); accepted: a bucket "
            f"folder holding only empty folders: remove it from <root>/gcs/{bucket}",
            "conflict",
        )
