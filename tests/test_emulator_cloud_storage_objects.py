"""The storage door stays in ``<root>/gcs``: a symbolic link that leads out is never
followed, for reads, writes, listings and deletes (checked after resolution)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from google.api_core import exceptions
from google.cloud import storage  # type: ignore[attr-defined]

import trainpool.emulator as emulator

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def bucket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[storage.Bucket]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "host.txt").write_text("host file")
    with emulator.start(tmp_path / "root") as emu:
        assert emu.storage_address is not None
        gcs = emu.root / "gcs"
        (gcs / "bkt" / "in").mkdir(parents=True)
        (gcs / "bkt" / "in" / "real.txt").write_text("inside")
        (gcs / "bkt" / "lnk").symlink_to(outside)  # a folder link out of the store
        (gcs / "bkt" / "file-lnk").symlink_to(outside / "host.txt")  # a file link out
        (gcs / "bkt" / "ok-lnk").symlink_to(gcs / "bkt" / "in" / "real.txt")  # stays in
        (gcs / "escaped").symlink_to(outside)  # a bucket that is a link out
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", emu.storage_address)
        yield storage.Client(project="p").bucket("bkt")


def test_reads_through_a_link_out_are_refused(bucket: storage.Bucket, tmp_path: Path) -> None:
    for name in ("lnk/host.txt", "file-lnk"):
        with pytest.raises(exceptions.Forbidden, match="leads outside"):
            bucket.blob(name).download_as_bytes()
        with pytest.raises(exceptions.Forbidden, match="leads outside"):
            bucket.get_blob(name)
    assert bucket.blob("ok-lnk").download_as_bytes() == b"inside"


def test_writes_and_deletes_through_a_link_out_are_refused(
    bucket: storage.Bucket, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    for name in ("lnk/new.txt", "lnk/deep/new.txt", "file-lnk"):
        with pytest.raises(exceptions.Forbidden, match="leads outside"):
            bucket.blob(name).upload_from_string("planted")
    with pytest.raises(exceptions.Forbidden):
        bucket.blob("lnk/host.txt", chunk_size=256 * 1024).upload_from_string(b"x" * 300_000)
    with pytest.raises(exceptions.Forbidden):
        bucket.blob("lnk/host.txt").delete()
    assert sorted(p.name for p in outside.iterdir()) == ["host.txt"]
    assert (outside / "host.txt").read_text() == "host file"


def test_a_listing_shows_no_link_out_and_a_bucket_link_out_is_refused(
    bucket: storage.Bucket,
) -> None:
    client = bucket.client
    assert [b.name for b in client.list_blobs("bkt")] == ["in/real.txt", "ok-lnk"]
    with pytest.raises(exceptions.Forbidden):
        list(client.list_blobs("escaped"))
    with pytest.raises(exceptions.Forbidden):
        client.bucket("escaped").blob("host.txt").download_as_bytes()


def test_ranged_reads_pages_and_prefixes_with_the_client(bucket: storage.Bucket) -> None:
    data = bytes(range(256)) * 40
    bucket.blob("r/data.bin").upload_from_string(data)
    blob = bucket.blob("r/data.bin")
    assert blob.download_as_bytes(start=10, end=19) == data[10:20]
    assert blob.download_as_bytes(start=10000) == data[10000:]
    for i in range(5):
        bucket.blob(f"p/{i}/x").upload_from_string("x")
        bucket.blob(f"p/f{i}").upload_from_string("x")
    pages = bucket.client.list_blobs("bkt", prefix="p/", delimiter="/", page_size=3).pages
    seen_prefixes, seen_items = [], []
    for page in pages:
        assert page.num_items + len(page.prefixes) <= 3
        seen_items += [b.name for b in page]
        seen_prefixes += sorted(page.prefixes)
    assert seen_prefixes == [f"p/{i}/" for i in range(5)]
    assert seen_items == [f"p/f{i}" for i in range(5)]


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[storage.Client]:
    with emulator.start(tmp_path / "root") as emu:
        assert emu.storage_address is not None
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", emu.storage_address)
        yield storage.Client(project="p")


def test_a_bucket_is_deleted_when_empty_and_kept_whole_while_it_holds_objects(
    client: storage.Client, tmp_path: Path
) -> None:
    stored = tmp_path / "root" / "gcs"
    bucket = client.create_bucket("staging")
    for name in ("pipeline/run-1/model.bin", "top.txt"):
        bucket.blob(name).upload_from_string(b"w")
    with pytest.raises(exceptions.Conflict, match=r"The bucket you tried to delete is not empty\."):
        bucket.delete()
    listed = [b.name for b in client.list_blobs("staging")]
    assert listed == ["pipeline/run-1/model.bin", "top.txt"], "the 409 changed nothing"
    bucket.delete(force=True)  # the client deletes the objects, then the bucket
    assert not (stored / "staging").exists()
    with pytest.raises(exceptions.NotFound, match="bucket does not exist"):
        client.get_bucket("staging")
    with pytest.raises(exceptions.NotFound, match="bucket does not exist"):
        bucket.delete()
    with pytest.raises(exceptions.NotFound):
        bucket.blob("late.txt").upload_from_string(b"a write after the delete")
    assert not (stored / "staging").exists(), "a write does not make a deleted bucket again"

    client.create_bucket("empty").delete()
    client.create_bucket("real")
    (stored / "alias").symlink_to(stored / "real")  # a bucket that is a link inside the store
    with pytest.raises(exceptions.Conflict, match="is a link in the local store"):
        client.bucket("alias").delete()
    assert (stored / "alias").is_symlink() and (stored / "real").is_dir()
    (stored / "alias").unlink()
    client.bucket("real").delete()
    (stored / "folders" / "a" / "b").mkdir(parents=True)  # left by writes by path
    client.bucket("folders").delete()
    assert sorted(p.name for p in stored.iterdir()) == []


def test_a_bucket_delete_honours_the_metageneration_preconditions(client: storage.Client) -> None:
    bucket = client.create_bucket("pre")
    with pytest.raises(exceptions.PreconditionFailed, match="metageneration is 1"):
        bucket.delete(if_metageneration_match=2)
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.delete(if_metageneration_not_match=1)
    bucket.delete(if_metageneration_match=1)


def test_a_bucket_holding_what_is_no_object_is_kept_and_says_what(
    bucket: storage.Bucket, tmp_path: Path
) -> None:
    """After ``force=True`` deletes its objects, the bucket still holds links out of the
    store (and ``ok-lnk``, left leading nowhere once ``in/real.txt`` went): 409 naming one,
    and neither the links nor what they lead to are touched."""
    with pytest.raises(exceptions.Conflict, match="holds 'file-lnk' in it, which is not an object"):
        bucket.delete(force=True)
    stored = tmp_path / "root" / "gcs" / "bkt"
    assert sorted(p.name for p in stored.iterdir()) == ["file-lnk", "lnk", "ok-lnk"]
    assert (tmp_path / "outside" / "host.txt").read_text() == "host file"
    for link in stored.iterdir():
        link.unlink()
    bucket.delete()
    assert not stored.exists() and (tmp_path / "outside" / "host.txt").exists()
