"""One store, three doors: the real google-cloud-storage client, over real HTTP on loopback,
sees the objects of ``<root>/gcs`` through the emulator's Cloud Storage JSON API."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.api_core import exceptions
from google.cloud import storage  # type: ignore[attr-defined]

import trainpool.emulator as emulator
from trainpool.emulator import root_lock
from trainpool.home import Home

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path / "root") as running:
        assert running.storage_address is not None
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", running.storage_address)
        yield running


def test_the_door_is_on_by_default_behind_a_secret_and_published(tmp_path: Path) -> None:
    with emulator.start(tmp_path / "plain", storage=False) as plain:
        assert plain.storage_address is None and plain.storage_env() == {}
        token = Home(plain.root).storage_token  # the REST door's secret all the same
        assert token.stat().st_mode & 0o077 == 0 and len(token.read_text().strip()) >= 40
    with emulator.start(tmp_path / "root") as emu:
        assert emu.storage_address is not None
        base, secret = emu.storage_address.rsplit("/", 1)
        assert base.startswith("http://127.0.0.1:") and len(secret) >= 40
        assert emu.state.storage_address == emu.storage_address
        home = Home(emu.root)
        record = json.loads(home.lock.read_text())
        assert record["storage_address"] == emu.storage_address
        assert root_lock.storage_address(emu.root) == emu.storage_address
        assert home.storage_token.read_text().strip() == secret
        for private in (home.lock, home.storage_token):
            assert stat.S_IMODE(private.stat().st_mode) == 0o600
        assert emu.storage_env() == {
            "STORAGE_EMULATOR_HOST": emu.storage_address,
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": base + "/",
            "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE": str(home.storage_token),
        }
    with emulator.start(tmp_path / "root") as again:
        assert again.storage_address is not None
        assert again.storage_address.rsplit("/", 1)[1] != secret, "a fresh secret each start"
    assert root_lock.storage_address(tmp_path / "root") is None


def test_objects_by_path_and_by_api_are_the_same(emu: emulator.Emulator) -> None:
    gcs = emu.root / "gcs"
    (gcs / "bkt" / "a").mkdir(parents=True)
    (gcs / "bkt" / "a" / "b.txt").write_bytes(b"written by path")
    client = storage.Client(project="p")
    bucket = client.bucket("bkt")
    assert bucket.exists() and not client.bucket("nobkt").exists()
    assert bucket.blob("a/b.txt").download_as_bytes() == b"written by path"

    data = os.urandom(5 * 1024 * 1024)
    big = bucket.blob("a/big.bin", chunk_size=1024 * 1024)  # a chunk size: the resumable upload
    big.upload_from_string(data)
    assert (gcs / "bkt" / "a" / "big.bin").read_bytes() == data
    assert bucket.blob("a/big.bin").download_as_bytes() == data
    assert not list((emu.root / "storage-uploads").iterdir())

    assert [b.name for b in client.list_blobs("bkt", prefix="a/")] == ["a/b.txt", "a/big.bin"]
    top = client.list_blobs("bkt", delimiter="/")
    assert list(top) == [] and top.prefixes == {"a/"}
    assert len(list(client.list_blobs("bkt", page_size=1))) == 2

    bucket.blob("c.txt").upload_from_string("small")  # multipart
    assert (gcs / "bkt" / "c.txt").read_text() == "small"
    blob = bucket.get_blob("c.txt")
    assert blob is not None and blob.size == 5 and blob.md5_hash and blob.crc32c
    blob.delete()
    assert not (gcs / "bkt" / "c.txt").exists()
    with pytest.raises(exceptions.NotFound):
        bucket.blob("c.txt").download_as_bytes()

    client.create_bucket("made-here")
    assert (gcs / "made-here").is_dir()


def test_a_hostile_name_is_refused_and_writes_nothing(emu: emulator.Emulator) -> None:
    (emu.root / "gcs" / "bkt").mkdir(parents=True)
    before = sorted(emu.root.parent.rglob("*"))
    bucket = storage.Client(project="p").bucket("bkt")
    for name in ("../x", "a/../../x"):
        with pytest.raises(exceptions.BadRequest, match=r"'\.\.' segment"):
            bucket.blob(name).upload_from_string("bad")
        with pytest.raises(exceptions.BadRequest):
            bucket.blob(name).download_as_bytes()
    with pytest.raises(exceptions.BadRequest, match="goog"):
        storage.Client(project="p").create_bucket("goog-bkt")
    source = bucket.blob("src.txt")
    (emu.root / "gcs" / "bkt" / "src.txt").write_text("src")
    before = sorted(emu.root.parent.rglob("*"))
    for name in ("../x", "a/../../x", "../", "a/../../"):
        with pytest.raises(exceptions.BadRequest, match=r"'\.\.' segment"):
            bucket.blob(name).rewrite(source)
        with pytest.raises(exceptions.BadRequest, match=r"'\.\.' segment"):
            bucket.blob(name).upload_from_string(b"")  # a folder marker's name too
    with pytest.raises(exceptions.BadRequest, match="ifMetagenerationMatch: 'x'"):
        bucket.delete(if_metageneration_match="x")  # type: ignore[arg-type]
    after = [p for p in sorted(emu.root.parent.rglob("*")) if "storage-uploads" not in p.parts]
    assert after == [p for p in before if "storage-uploads" not in p.parts]


def test_the_sdk_pipeline_submit_checks_its_bucket_in_moments(
    emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check ``aiplatform.PipelineJob.submit`` makes before it creates the job: against
    the real Cloud Storage it retried for 80-100 s; against the door it takes moments."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.aiplatform.utils import gcs_utils

    started = time.monotonic()  # the SDK's modules are imported above, outside the timing
    uri = gcs_utils.create_gcs_bucket_for_pipeline_artifacts_if_it_does_not_exist(
        output_artifacts_gcs_dir="gs://pipes-bkt/runs",
        service_account="sa@p.iam.gserviceaccount.com",
        project="p",
        location="us-central1",
        credentials=AnonymousCredentials(),
    )
    elapsed = time.monotonic() - started
    assert uri == "gs://pipes-bkt/runs"
    assert (emu.root / "gcs" / "pipes-bkt").is_dir()
    assert elapsed < 30, f"the bucket check took {elapsed:.1f} s"  # not the SDK's retries


def test_pipeline_job_submit_against_the_emulator_takes_moments(
    sdk_emulator: emulator.Emulator,
) -> None:
    """``aiplatform.PipelineJob(...).submit()`` with both doors set: no minute of retries."""
    from google.cloud import aiplatform

    template = Path(__file__).resolve().parents[1] / "pipelines" / "distributed_training.yaml"
    emu = sdk_emulator
    aiplatform.init(project="p", location="us-central1")
    job = aiplatform.PipelineJob(
        display_name="bucket-check",
        template_path=str(template),
        pipeline_root="gs://pipes-bkt/runs",
        parameter_values={"cluster_request": "{}"},
    )
    started = time.monotonic()
    job.submit(service_account="sa@p.iam.gserviceaccount.com")
    elapsed = time.monotonic() - started
    assert job.resource_name.startswith("projects/p/locations/us-central1/pipelineJobs/")
    assert (emu.root / "gcs" / "pipes-bkt").is_dir()
    assert elapsed < 30, f"PipelineJob.submit took {elapsed:.1f} s"  # not the SDK's retries
