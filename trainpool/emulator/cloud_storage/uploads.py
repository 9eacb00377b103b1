"""Writes to the local store through the JSON API: media, multipart and resumable uploads.

Every upload is written whole into ``<root>/storage-uploads/`` (the owner's only), then
renamed into place, so a reader never sees half an object; ``ifGenerationMatch=0`` (create
only) is honoured. A resumable session keeps the bytes received so far.
"""

from __future__ import annotations

import os
import re
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainpool.emulator.cloud_storage.objects import ApiError, Objects, bad, not_found

_CONTENT_RANGE = re.compile(r"^bytes (?:(\d+)-(\d+)|\*)/(\d+|\*)$")


@dataclass
class _Upload:
    """One resumable upload session: bytes received so far in ``partial``."""

    bucket: str
    name: str
    partial: Path
    received: int = 0


class Uploads:
    """Uploads into ``objects``' store, their partial files in ``uploads_dir``."""

    def __init__(self, objects: Objects, uploads_dir: Path) -> None:
        self.objects = objects
        self.uploads_dir = uploads_dir
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
        return self.uploads_dir / f"{secrets.token_hex(16)}.partial"

    def _commit(self, bucket: str, name: str, partial: Path) -> dict[str, Any]:
        path = self.objects.object_path(bucket, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            partial.unlink(missing_ok=True)
            raise ApiError(409, f"{bucket}/{name} is a folder in the local store", "conflict")
        os.replace(partial, path)
        return self.objects.describe(bucket, name, path, hashes=True)

    def put_object(
        self, bucket: str, name: str, data: bytes, query: dict[str, str]
    ) -> dict[str, Any]:
        self.objects.bucket_resource(bucket)
        path = self.objects.object_path(bucket, name)
        self._check_precondition(path, query)
        partial = self._partial()
        partial.write_bytes(data)
        return self._commit(bucket, name, partial)

    def start_upload(self, bucket: str, name: str, query: dict[str, str]) -> str:
        self.objects.bucket_resource(bucket)
        path = self.objects.object_path(bucket, name)
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
            raise not_found(f"upload_id: {upload_id!r}: no such resumable upload session")
        match = _CONTENT_RANGE.match(content_range.strip()) if content_range else None
        if content_range and match is None:
            raise bad(f"Content-Range: {content_range!r}; accepted: bytes A-B/TOTAL, bytes */TOTAL")
        first = int(match.group(1)) if match and match.group(1) else None
        total = match.group(3) if match else str(upload.received + len(data))
        if data:
            if first is None:
                first = upload.received
            if first != upload.received:
                raise bad(
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
