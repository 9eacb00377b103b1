"""The build context: the files Docker would see, their digest, and their tarball.

The digest is the content address of an image: sha256 over each kept file's
relative POSIX path, content and executable bit, each symlink's target, and the
build args. Walk order, timestamps, owners and permission bits other than
"executable" do not enter it, so the same folder gives the same digest on any
machine; any change of content does change it. The tarball is written the same
way (sorted, mtime 0, owner 0, modes 0644/0755), so it is byte-for-byte stable.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import tarfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from trainpool.images import archives, ignore, secrets

_CHUNK = 1 << 20
ALWAYS_SENT = frozenset({"Dockerfile", ".dockerignore"})
"""Docker sends these even when .dockerignore lists them: the build needs them."""


@dataclass(frozen=True)
class Entry:
    """One path of the context: a file (from disk or generated) or a symlink."""

    path: str
    mode: int
    sha256: str = ""
    source: Path | None = None
    content: bytes | None = None
    link: str | None = None

    def open(self) -> BinaryIO:
        if self.content is not None:
            return io.BytesIO(self.content)
        assert self.source is not None
        return self.source.open("rb")


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _mode(st_mode: int) -> int:
    return 0o755 if st_mode & stat.S_IXUSR else 0o644


def file_entry(path: str, source: Path) -> Entry:
    return Entry(path, _mode(source.stat().st_mode), _file_sha256(source), source=source)


def generated(path: str, content: bytes, executable: bool = False) -> Entry:
    """An entry that is not on disk (a generated Dockerfile, a vendored module)."""
    return Entry(
        path, 0o755 if executable else 0o644, hashlib.sha256(content).hexdigest(), content=content
    )


def scanned_entry(rel: str, source: Path) -> Entry:
    """:func:`file_entry`, reading the file once for both its digest and a credential
    (:class:`trainpool.images.secrets.Scanner`): CredentialInContext names it."""
    digest, scanner = hashlib.sha256(), secrets.Scanner()
    with source.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            kind = scanner.feed(chunk)
            if kind is not None:
                raise secrets.CredentialInContext(rel, kind)
    return Entry(rel, _mode(source.stat().st_mode), digest.hexdigest(), source=source)


def _walk(root: Path, patterns: list[ignore.Pattern]) -> Iterator[Entry]:
    can_reinclude = any(p.negated for p in patterns)
    tally = archives.Tally("source_dir")
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        rel_dir = here.relative_to(root).as_posix()
        kept_dirs = []
        for name in sorted(dirs):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            full = here / name
            if full.is_symlink():
                files.append(name)
            elif (full / "pyvenv.cfg").exists():
                continue
            elif can_reinclude or not ignore.ignored(rel, patterns):
                tally.path(rel)  # before os.walk goes deeper (it recurses on Python 3.11)
                kept_dirs.append(name)
        dirs[:] = kept_dirs
        for name in sorted(files):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            full = here / name
            if rel not in ALWAYS_SENT and ignore.ignored(rel, patterns):
                continue
            if full.is_symlink():
                tally.path(rel)
                yield Entry(rel, 0o777, link=os.readlink(full))
            elif full.is_file():
                tally.path(rel)
                tally.size(rel, full.stat().st_size)
                yield scanned_entry(rel, full)


def collect(root: Path, patterns: list[ignore.Pattern] | None = None) -> list[Entry]:
    """The entries of folder ``root`` that its ``.dockerignore`` (or the default) keeps.

    A kept file that holds a credential (by content, anywhere in it) raises
    :class:`trainpool.images.secrets.CredentialInContext` naming it; a context past the
    bounds of :mod:`trainpool.images.archives` (files, bytes, depth, name length) raises
    :class:`trainpool.images.archives.UnsafeArchive` naming the first path past them.
    """
    if not root.is_dir():
        raise FileNotFoundError(
            f"source_dir {str(root)!r}: not a folder; accepted: a trainer folder"
        )
    return list(_walk(root, ignore.load(root) if patterns is None else patterns))


Row = tuple[str, int, str]
"""One entry as the digest sees it: path, mode, and the link target or the content's sha256."""


def digest_of(rows: list[Row], build_args: Mapping[str, str] | None = None) -> str:
    """The content address of a context given by its rows (sorted by path) and build args:
    what :attr:`BuildContext.digest` is, computable from an unpacked archive or a stored copy."""
    manifest = {
        "format": "trainpool-context-1",
        "entries": [[path, f"{mode:o}", target] for path, mode, target in rows],
        "buildArgs": sorted((build_args or {}).items()),
    }
    return hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class BuildContext:
    """Entries (by path) plus build args: everything a build depends on."""

    entries: tuple[Entry, ...]
    build_args: Mapping[str, str] = field(default_factory=dict)

    @staticmethod
    def of(entries: list[Entry], build_args: Mapping[str, str] | None = None) -> BuildContext:
        by_path = {e.path: e for e in entries}
        return BuildContext(tuple(by_path[p] for p in sorted(by_path)), dict(build_args or {}))

    def paths(self) -> list[str]:
        return [e.path for e in self.entries]

    def get(self, path: str) -> Entry | None:
        return next((e for e in self.entries if e.path == path), None)

    def rows(self) -> list[Row]:
        """``(path, mode, link target or sha256)`` of each entry, by path: what is hashed."""
        return [(e.path, e.mode, e.link or e.sha256) for e in self.entries]

    @property
    def digest(self) -> str:
        """Hex sha256 of the context (files, Dockerfile, build args)."""
        return digest_of(self.rows(), self.build_args)

    def stage(self, dest: Path) -> None:
        """Write the context into the (new or empty) folder ``dest``."""
        for entry in self.entries:
            target = dest / entry.path
            target.parent.mkdir(parents=True, exist_ok=True)
            if entry.link is not None:
                target.symlink_to(entry.link)
                continue
            with entry.open() as src, target.open("wb") as out:
                shutil.copyfileobj(src, out, _CHUNK)
            target.chmod(entry.mode)

    def write_tarball(self, out: BinaryIO) -> None:
        """A gzipped tar of the context, byte-for-byte reproducible."""
        with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar:
                for entry in self.entries:
                    info = tarfile.TarInfo(entry.path)
                    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                    info.mode = entry.mode
                    if entry.link is not None:
                        info.type, info.linkname = tarfile.SYMTYPE, entry.link
                        tar.addfile(info)
                        continue
                    with entry.open() as src:
                        info.size = src.seek(0, io.SEEK_END)
                        src.seek(0)
                        tar.addfile(info, src)
