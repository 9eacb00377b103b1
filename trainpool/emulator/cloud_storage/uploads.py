"""Writes to the local store through the JSON API: media, multipart and resumable uploads.

Every upload is streamed into ``<root>/storage-uploads/`` (the owner's only) as it
arrives, never held in memory, then renamed into place, so a reader never sees half an
object; ``ifGenerationMatch=0`` (create only) is honoured. A resumable session keeps the
bytes received so far; ``Content-Range: bytes */TOTAL`` (or ``*/*``) asks where it stands
(https://cloud.google.com/storage/docs/performing-resumable-uploads). No object grows past
the door's limit (413). The bucket, the name and the precondition are checked before a
byte of the media is read. Objects are made by uploads, by compose and by copy (rewrite);
their folders are made below the bucket's folder only, never the bucket itself, so a write
racing a bucket's delete answers 404 rather than making the bucket again. A folder marker (an
empty object whose name ends in ``/``) is kept as the folder.
"""

from __future__ import annotations

import os
import re
import secrets
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainpool.emulator.cloud_storage.bodies import DEFAULT_LIMIT, too_large
from trainpool.emulator.cloud_storage.objects import ApiError, Objects, bad, not_found

_CONTENT_RANGE = re.compile(r"^bytes (?:(\d{1,19})-(\d{1,19})|\*)/(\d{1,19}|\*)$")
_DIGITS = re.compile(r"^\d{1,19}$")
_CHUNK = 1 << 20
MAX_COMPOSE = 32
_TRIES = 3


def is_folder_marker(name: str) -> bool:
    """Whether ``name`` is a folder marker's (ends in ``/``: kept as the folder, empty)."""
    return name.endswith("/") and name.strip("/") != ""


@dataclass
class _Upload:
    """One resumable upload session: bytes received so far in ``partial``."""

    bucket: str
    name: str
    partial: Path
    received: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class ContentRange:
    """A resumable PUT's ``Content-Range``: ``first``/``last`` (None for ``*``), ``total``
    (None for ``*``)."""

    first: int | None
    last: int | None
    total: int | None

    @classmethod
    def parse(cls, header: str, limit: int) -> ContentRange | None:
        if not header:
            return None
        found = _CONTENT_RANGE.match(header.strip())
        if found is None:
            raise bad(
                f"Content-Range: {header!r}; accepted: bytes FIRST-LAST/TOTAL, "
                "bytes FIRST-LAST/*, bytes */TOTAL, bytes */*"
            )
        first, last, total = found.groups()
        parsed = cls(
            int(first) if first else None,
            int(last) if last else None,
            None if total == "*" else int(total),
        )
        if parsed.first is not None and parsed.last is not None and parsed.last < parsed.first:
            raise bad(f"Content-Range: {header!r}: LAST is before FIRST")
        if parsed.total is not None and parsed.total > limit:
            raise too_large(parsed.total, limit)
        return parsed


class Uploads:
    """Uploads into ``objects``' store, their partial files in ``uploads_dir``; no object over
    ``limit`` bytes."""

    def __init__(self, objects: Objects, uploads_dir: Path, limit: int = DEFAULT_LIMIT) -> None:
        self.objects = objects
        self.uploads_dir = uploads_dir
        self.limit = limit
        self._uploads: dict[str, _Upload] = {}
        self._lock = threading.Lock()

    def _check_precondition(self, path: Path, query: dict[str, str]) -> None:
        if query.get("ifGenerationMatch") == "0" and path.exists():
            raise ApiError(
                412,
                "At least one of the pre-conditions you specified did not hold.",
                "conditionNotMet",
            )

    def _partial(self) -> Path:
        self.uploads_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self.uploads_dir / f"{secrets.token_hex(16)}.partial"
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        return path

    def _commit(self, bucket: str, name: str, partial: Path) -> dict[str, Any]:
        if is_folder_marker(name):
            return self._commit_folder(bucket, name, partial)
        path = self.objects.object_path(bucket, name)
        try:
            for attempt in range(_TRIES):
                self._folders(bucket, path.parent)
                path = self.objects.object_path(bucket, name)  # again: nothing led out meanwhile
                if path.is_dir():
                    raise ApiError(
                        409, f"{bucket}/{name} is a folder in the local store", "conflict"
                    )
                try:
                    os.replace(partial, path)
                    break
                except FileNotFoundError:
                    # its folder went meanwhile: with its bucket (404), or emptied by a delete
                    # beside it (made again on the next try)
                    if not self.objects.bucket_path(bucket).is_dir():
                        raise self.objects.gone(bucket) from None
                    if attempt == _TRIES - 1:
                        raise
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        return self.objects.describe(bucket, name, path, hashes=True)

    def _folders(self, bucket: str, folder: Path) -> None:
        """Make the folders from the bucket's down to ``folder``, never the bucket's own: a
        bucket deleted meanwhile is not made again by a write into it (404 instead)."""
        top = self.objects.bucket_path(bucket)
        for _ in range(_TRIES):
            if not top.is_dir():
                raise self.objects.gone(bucket)
            here = top
            try:
                for part in folder.relative_to(top).parts:
                    here = here / part
                    try:
                        here.mkdir()
                    except FileExistsError:
                        continue
                return
            except FileNotFoundError:
                continue  # a folder above went meanwhile (its last object deleted): again
            except NotADirectoryError:
                prefix = here.parent.relative_to(top).as_posix()
                raise ApiError(
                    409,
                    f"{bucket}/{prefix} is an object in the local store, so it cannot also be "
                    "a folder; accepted: a name that does not continue an object's name",
                    "conflict",
                ) from None
        if not top.is_dir():
            raise self.objects.gone(bucket)
        raise ApiError(
            503,
            f"{bucket}/{folder.relative_to(top).as_posix()}/: its folders were removed each "
            "time they were made (objects beside it deleted meanwhile); try again",
            "backendError",
        )

    def check_target(self, bucket: str, name: str, query: dict[str, str]) -> None:
        """Refuse a write to ``bucket``/``name`` before any of its bytes is read."""
        self.objects.bucket_resource(bucket)
        if is_folder_marker(name):
            self._check_precondition(self.objects.folder_path(bucket, name), query)
            return
        self._check_precondition(self.objects.object_path(bucket, name), query)

    def _commit_folder(self, bucket: str, name: str, partial: Path) -> dict[str, Any]:
        """A folder marker (an empty object whose name ends in ``/``) is kept as the folder
        itself: the store maps objects to files, and a folder cannot hold bytes."""
        try:
            size = partial.stat().st_size
        finally:
            partial.unlink(missing_ok=True)
        if size:
            raise bad(
                f"object: {bucket}/{name} has {size} bytes; the local store keeps a name "
                "ending in '/' as a folder (a folder marker), which holds none; accepted: "
                "an empty body, or a name that does not end in '/'"
            )
        path = self.objects.folder_path(bucket, name)
        self._folders(bucket, path)
        path = self.objects.folder_path(bucket, name)  # again: nothing led out meanwhile
        if not path.is_dir():
            raise ApiError(409, f"{bucket}/{name[:-1]} is an object in the local store", "conflict")
        return self.objects.describe_folder(bucket, name, path)

    def put_object(
        self, bucket: str, name: str, pieces: Iterable[bytes], query: dict[str, str]
    ) -> dict[str, Any]:
        """Stream ``pieces`` into the object (after :meth:`check_target`); its resource."""
        self.check_target(bucket, name, query)
        partial = self._partial()
        try:
            with partial.open("wb") as handle:
                for piece in pieces:
                    handle.write(piece)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        return self._commit(bucket, name, partial)

    def copy(
        self, source: tuple[str, str], bucket: str, name: str, query: dict[str, str]
    ) -> dict[str, Any]:
        """The object ``name`` of ``bucket`` made a copy of ``source`` (``(bucket, object)``,
        any bucket of the store), in one call, as ``objects.rewrite`` and ``objects.copy`` do
        within one location and storage class (https://cloud.google.com/storage/docs/
        json_api/v1/objects/rewrite, .../objects/copy). TensorFlow renames a file (a
        checkpoint's shards, a SavedModel's variables) with a rewrite, then a delete."""
        self.check_target(bucket, name, query)
        path = self._source(*source)
        if path.stat().st_size > self.limit:
            raise too_large(path.stat().st_size, self.limit)
        return self.put_object(bucket, name, self._read(path), query)

    def _source(self, bucket: str, name: str) -> Path:
        self.objects.bucket_resource(bucket)
        path = self.objects.object_path(bucket, name)
        if not path.is_file():
            raise not_found(f"No such object: {bucket}/{name}")
        return path

    @staticmethod
    def _read(*paths: Path) -> Iterable[bytes]:
        for path in paths:
            with path.open("rb") as handle:
                while piece := handle.read(_CHUNK):
                    yield piece

    def compose(
        self, bucket: str, name: str, sources: list[str], query: dict[str, str]
    ) -> dict[str, Any]:
        """The object ``name`` made of ``sources`` (objects of ``bucket``) one after another,
        as ``objects.compose`` does (https://cloud.google.com/storage/docs/json_api/v1/objects/
        compose: 1 to 32 sources); gcloud's parallel composite uploads end with it."""
        if not 1 <= len(sources) <= MAX_COMPOSE:
            raise bad(f"sourceObjects: {len(sources)} objects; accepted: 1 to {MAX_COMPOSE}")
        self.check_target(bucket, name, query)
        paths = [self._source(bucket, source) for source in sources]
        if sum(path.stat().st_size for path in paths) > self.limit:
            raise too_large(sum(path.stat().st_size for path in paths), self.limit)
        return self.put_object(bucket, name, self._read(*paths), query)

    def start_upload(
        self, bucket: str, name: str, query: dict[str, str], declared: str | None = None
    ) -> str:
        """A new resumable session's id; ``declared`` is ``X-Upload-Content-Length``."""
        if declared is not None:
            if not _DIGITS.match(declared.strip()):
                raise bad(f"X-Upload-Content-Length: {declared!r}; accepted: a number of bytes")
            if int(declared) > self.limit:
                raise too_large(declared.strip(), self.limit)
        self.check_target(bucket, name, query)
        upload_id = secrets.token_urlsafe(24)
        partial = self._partial()
        with self._lock:
            self._uploads[upload_id] = _Upload(bucket, name, partial)
        return upload_id

    def continue_upload(
        self, upload_id: str, content_range: str, pieces: Iterable[bytes]
    ) -> tuple[int, dict[str, Any] | None]:
        """``(received, None)`` while the upload goes on, ``(size, object)`` once it is whole.

        ``pieces`` (the PUT's body) is read only after the session and its range are checked.
        """
        with self._lock:
            upload = self._uploads.get(upload_id)
        if upload is None:
            raise not_found(f"upload_id: {upload_id!r}: no such resumable upload session")
        span = ContentRange.parse(content_range, self.limit)
        with upload.lock:
            if span is not None and span.first is not None and span.first != upload.received:
                raise bad(
                    f"Content-Range: {content_range!r} starts at {span.first}; "
                    f"accepted: the next byte, {upload.received}"
                )
            written = self._append(upload, pieces)
            if span is not None and span.last is not None and span.first is not None:
                if written != span.last - span.first + 1:
                    upload.received -= written
                    os.truncate(upload.partial, upload.received)
                    raise bad(
                        f"Content-Range: {content_range!r} names "
                        f"{span.last - span.first + 1} bytes; the body has {written}"
                    )
            total = upload.received if span is None else span.total
            if total is not None and upload.received > total:
                raise bad(f"Content-Range: {content_range!r}: more bytes than the total")
            if total is None or total != upload.received:
                return upload.received, None
            with self._lock:
                self._uploads.pop(upload_id, None)
        return upload.received, self._commit(upload.bucket, upload.name, upload.partial)

    def _append(self, upload: _Upload, pieces: Iterable[bytes]) -> int:
        """Append the body to the session's file; on any failure, leave the file as it was."""
        start = upload.received
        try:
            with upload.partial.open("r+b") as handle:
                handle.seek(start)
                for piece in pieces:
                    if handle.tell() + len(piece) > self.limit:
                        raise too_large(f"more than {self.limit}", self.limit)
                    handle.write(piece)
                written = handle.tell() - start
        except BaseException:
            os.truncate(upload.partial, start)
            raise
        upload.received = start + written
        return written

    def close(self) -> None:
        with self._lock:
            for upload in self._uploads.values():
                upload.partial.unlink(missing_ok=True)
            self._uploads.clear()
