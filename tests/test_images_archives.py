"""Bounds on build contexts and source archives (issue 22, item 6): refused with a message
naming the path and the bound, before anything is written, never a RecursionError or an
OSError."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from trainpool.cluster_env.gcs import LOCAL_ROOT_ENV
from trainpool.images import archives, sources, storage
from trainpool.images.archives import UnsafeArchive
from trainpool.images.context import collect

URI = "gs://pipes/root/trainpool/sources/" + "1" * 64 + ".tar.gz"


def archive(*members: tarfile.TarInfo, data: bytes = b"") -> bytes:
    """A .tar.gz of ``members``; a file member gets ``data`` (its header may claim more)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for info in members:
            tar.addfile(info, io.BytesIO(data[: info.size]) if info.isfile() else None)
    return out.getvalue()


def member(name: str, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    return info


def bomb(size: int) -> bytes:
    """A small .tar.gz whose one member declares ``size`` bytes (the data is cut short)."""
    header = member("trainer/weights.bin", size).tobuf(format=tarfile.GNU_FORMAT)
    out = io.BytesIO()
    import gzip

    with gzip.GzipFile(fileobj=out, mode="wb") as gz:
        gz.write(header + b"\0" * 1024)
    return out.getvalue()


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    gcs = tmp_path / "gcs"
    (gcs / "pipes").mkdir(parents=True)
    monkeypatch.setenv(LOCAL_ROOT_ENV, str(gcs))
    return gcs


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (lambda: bomb(1_100_000_000), "more than 1,073,741,824 bytes"),
        (lambda: archive(member("a/" * 2000 + "x")), "2001 folders deep"),
        (lambda: archive(member("trainer/" + "n" * 300 + ".py")), "a name of 303 bytes"),
        (lambda: archive(member("x" * 2000)), "2,000 bytes long"),
        (lambda: b"\x1f\x8b\x08\x00garbage", "not a readable .tar.gz"),
        (lambda: b"not gzip at all", "not a readable .tar.gz"),
    ],
)
def test_unpack_refuses_past_the_bounds_before_writing(
    store: Path, tmp_path: Path, data: object, said: str
) -> None:
    storage.write(URI, data())  # type: ignore[operator]
    with pytest.raises(UnsafeArchive, match=f"source_dir: {URI}: .*{said}"):
        sources.unpack(URI, tmp_path / "dest")
    assert not (tmp_path / "dest").exists()


def test_unpack_refuses_too_many_files(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archives, "MAX_FILES", 100)
    storage.write(URI, archive(*(member(f"f{n}.py") for n in range(101))))
    with pytest.raises(UnsafeArchive, match="more than 100 files and folders; accepted"):
        sources.unpack(URI, tmp_path / "dest")


def test_an_archive_within_the_bounds_unpacks(store: Path, tmp_path: Path) -> None:
    data = archive(member("trainer/task.py", 3), data=b"x=1")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        digest = sources.archive_digest(tar)
    assert digest is not None
    named = URI.replace("1" * 64, digest)  # the name says what the files hash to
    storage.write(named, data)
    sources.unpack(named, tmp_path / "dest")
    assert (tmp_path / "dest" / "trainer" / "task.py").read_text() == "x=1"


def test_a_deep_folder_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    deep = tmp_path / "src" / Path(*["d"] * 100)
    deep.mkdir(parents=True)
    (deep / "task.py").write_text("print(1)\n")
    with pytest.raises(UnsafeArchive, match="is 65 folders deep"):
        collect(tmp_path / "src")


def test_a_context_past_the_size_bound_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archives, "MAX_BYTES", 1000)
    (tmp_path / "task.py").write_text("print(1)\n")
    with open(tmp_path / "data.bin", "wb") as handle:
        handle.truncate(10**12)  # a sparse terabyte: never read
    with pytest.raises(UnsafeArchive, match="'data.bin' brings the content to more than 1,000"):
        collect(tmp_path)


def test_the_emulator_build_extraction_has_the_same_bounds(tmp_path: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(archive(member("../x"))), mode="r:gz") as tar:
        with pytest.raises(UnsafeArchive, match="gs://b/o: member '../x' would land outside"):
            archives.extract(tar, str(tmp_path), "gs://b/o")
    assert list(tmp_path.iterdir()) == []
