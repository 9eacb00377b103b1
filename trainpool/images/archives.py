"""Bounds on a build context and on the archives it travels in, checked before anything is
written: a 1 MB archive cannot expand to a gigabyte, nor a folder walk run out of stack.

A context (a folder walked by :func:`trainpool.images.context.collect`, or a source
archive unpacked by :func:`trainpool.images.sources.unpack` and the emulator's Cloud Build)
holds at most:

- :data:`MAX_FILES` entries (files, folders and links);
- :data:`MAX_BYTES` bytes of file content in all (declared sizes, before extraction);
- paths :data:`MAX_DEPTH` parts deep and :data:`MAX_PATH` bytes long, each part at most
  :data:`MAX_NAME` bytes (Linux's ``NAME_MAX``; a longer name cannot be written, so it is
  refused with its name instead of an ``OSError``).

These are trainpool's bounds, not Docker's or Cloud Build's: a trainer's code comes
nowhere near them, and data that does belongs in Cloud Storage, not in the image. Archive
members are also refused when they would land outside the folder: absolute paths, ``..``,
links that leave it, and anything but files, folders and symlinks (Python's own ``data``
filter does this from 3.11.4 and 3.10.12 on; Debian's 3.11.2 lacks it, so the rule is stated
here).
"""

from __future__ import annotations

import tarfile
from pathlib import PurePosixPath

from trainpool.errors import InputError, brief

MAX_FILES = 100_000
MAX_BYTES = 1 << 30
MAX_DEPTH = 64
MAX_PATH = 1024
MAX_NAME = 255


class UnsafeArchive(InputError):
    """A source archive or context beyond the bounds, or with a member that would land
    outside its folder."""


class Tally:
    """Counts what a context holds as it is read; refuses the first path past a bound.

    ``where`` names the context in messages (``source_dir``, ``source_dir: gs://...``).
    """

    def __init__(self, where: str) -> None:
        self.where = where
        self.files = 0
        self.bytes = 0

    def _refuse(self, message: str) -> UnsafeArchive:
        return UnsafeArchive(f"{self.where}: {message}")

    def path(self, path: str) -> None:
        """Count one entry at relative POSIX ``path``; refuse a path past the bounds."""
        self.files += 1
        if self.files > MAX_FILES:
            raise self._refuse(
                f"more than {MAX_FILES:,} files and folders; accepted: at most {MAX_FILES:,} "
                "(list the rest in .dockerignore; data belongs in Cloud Storage)"
            )
        parts = PurePosixPath(path).parts
        encoded = path.encode("utf-8", "surrogateescape")
        if len(parts) > MAX_DEPTH or len(encoded) > MAX_PATH:
            raise self._refuse(
                f"{brief(path, 60)} is {len(parts)} folders deep and {len(encoded):,} bytes "
                f"long; accepted: at most {MAX_DEPTH} deep and {MAX_PATH:,} bytes"
            )
        long = next(
            (p for p in parts if len(p.encode("utf-8", "surrogateescape")) > MAX_NAME), None
        )
        if long is not None:
            raise self._refuse(
                f"{brief(long, 60)} in {brief(path, 60)} is a name of "
                f"{len(long.encode('utf-8', 'surrogateescape')):,} bytes; accepted: names of at "
                f"most {MAX_NAME} bytes"
            )

    def size(self, path: str, size: int) -> None:
        """Count ``size`` bytes of content at ``path``; refuse the total past the bound."""
        self.bytes += max(size, 0)
        if self.bytes > MAX_BYTES:
            raise self._refuse(
                f"{brief(path, 60)} brings the content to more than {MAX_BYTES:,} bytes; "
                f"accepted: at most {MAX_BYTES:,} (list large files in .dockerignore; data "
                "belongs in Cloud Storage)"
            )


def checked_members(tar: tarfile.TarFile, where: str) -> list[tarfile.TarInfo]:
    """The members of ``tar``, read one header at a time and refused at the first one past
    a bound or outside the folder (nothing is extracted here)."""
    tally = Tally(where)
    members = []
    for member in tar:
        tally.path(member.name)
        parts = PurePosixPath(member.name).parts
        target = PurePosixPath(member.name).parent / member.linkname if member.issym() else None
        outside = (
            member.name.startswith("/")
            or ".." in parts
            or not (member.isfile() or member.isdir() or member.issym())
            or (target is not None and (member.linkname.startswith("/") or ".." in target.parts))
        )
        if outside:
            raise UnsafeArchive(
                f"{where}: member {brief(member.name)} would land outside the folder; "
                "accepted: an archive `trainpool upload-source` made"
            )
        if member.isfile():
            tally.size(member.name, member.size)
        members.append(member)
    return members


def extract_members(tar: tarfile.TarFile, dest: str, members: list[tarfile.TarInfo]) -> None:
    """Extract ``members`` (from :func:`checked_members`) into ``dest``, with Python's
    ``data`` filter where it has one."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, members=members, filter="data")
    else:  # every member was checked by checked_members
        tar.extractall(dest, members=members)


def extract(tar: tarfile.TarFile, dest: str, where: str) -> None:
    """Check every member of ``tar`` (:func:`checked_members`), then extract them."""
    extract_members(tar, dest, checked_members(tar, where))
