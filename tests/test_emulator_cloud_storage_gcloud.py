"""The real ``gcloud storage`` against the storage door, configured only by the environment
the emulator gives (``Emulator.storage_env()``): copy up (multipart below 8 MiB, resumable
above, streamed from stdin), list, read (ranges too), copy down, remove. gcloud deletes an
upload whose answer lacks the right ``md5Hash``, so a passing copy proves the hashes."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import trainpool.emulator as emulator

GCLOUD = shutil.which("gcloud")
pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(GCLOUD is None, reason="gcloud (Google Cloud SDK) is not installed"),
]


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path_factory.mktemp("gcloud") / "root") as running:
        (running.root / "gcs" / "stg").mkdir(parents=True)
        (running.root / "gcs" / "stg" / "hello.txt").write_text("hello, door")
        yield running


def gcloud(
    emu: emulator.Emulator,
    *args: str,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    assert GCLOUD is not None
    config = emu.root.parent / "gcloud-config"
    config.mkdir(exist_ok=True)
    environ = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(config),
        "CLOUDSDK_CONFIG": str(config),
        "CLOUDSDK_CORE_PROJECT": "p",
        "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
        "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "1",
        **(emu.storage_env() if env is None else env),
    }
    return subprocess.run(
        [GCLOUD, "storage", *args], input=stdin, env=environ, capture_output=True, timeout=120
    )


def ok(done: subprocess.CompletedProcess[bytes]) -> bytes:
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return done.stdout


def test_copy_up_list_read_copy_down_remove(emu: emulator.Emulator, tmp_path: Path) -> None:
    small = tmp_path / "small.bin"
    small.write_bytes(os.urandom(100_000))  # below 8 MiB: one multipart POST
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(9 * 1024 * 1024))  # above: gcloud's /resumable/upload session
    stored = emu.root / "gcs" / "stg"
    ok(gcloud(emu, "cp", str(small), "gs://stg/up/small.bin"))
    ok(gcloud(emu, "cp", str(big), "gs://stg/up/big.bin"))
    ok(gcloud(emu, "cp", "-", "gs://stg/up/stream.txt", stdin=b"from stdin\n"))
    assert (stored / "up" / "small.bin").read_bytes() == small.read_bytes()
    assert (stored / "up" / "big.bin").read_bytes() == big.read_bytes()
    assert (stored / "up" / "stream.txt").read_bytes() == b"from stdin\n"

    assert ok(gcloud(emu, "ls", "gs://stg")).split() == [b"gs://stg/hello.txt", b"gs://stg/up/"]
    listed = ok(gcloud(emu, "ls", "gs://stg/up/**")).split()
    assert listed == [b"gs://stg/up/big.bin", b"gs://stg/up/small.bin", b"gs://stg/up/stream.txt"]
    assert ok(gcloud(emu, "cat", "gs://stg/hello.txt")) == b"hello, door"
    assert ok(gcloud(emu, "cat", "-r", "7-10", "gs://stg/hello.txt")) == b"door"

    back = tmp_path / "back.bin"
    ok(gcloud(emu, "cp", "gs://stg/up/big.bin", str(back)))
    assert back.read_bytes() == big.read_bytes()
    ok(gcloud(emu, "rm", "gs://stg/up/small.bin"))
    assert not (stored / "up" / "small.bin").exists()
    assert not list((emu.root / "storage-uploads").iterdir())


def test_a_parallel_composite_upload_is_composed(emu: emulator.Emulator, tmp_path: Path) -> None:
    """Above ``storage/parallel_composite_upload_threshold`` (150M by default; lowered here)
    gcloud uploads components, composes them, then deletes them (those it uploaded with
    resumable sessions, whose tracker files it keeps: threshold lowered too)."""
    data = tmp_path / "parts.bin"
    data.write_bytes(os.urandom(3 * 1024 * 1024 + 17))
    env = {
        **emu.storage_env(),
        "CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_ENABLED": "True",
        "CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_THRESHOLD": "1M",
        "CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_COMPONENT_SIZE": "1M",
        "CLOUDSDK_STORAGE_RESUMABLE_THRESHOLD": "512K",
    }
    ok(gcloud(emu, "cp", str(data), "gs://stg/composed.bin", env=env))
    stored = emu.root / "gcs" / "stg"
    assert (stored / "composed.bin").read_bytes() == data.read_bytes()
    assert not (stored / "gcloud").exists(), "components deleted, and their folders"


def test_gcloud_without_the_secret_is_refused(emu: emulator.Emulator, tmp_path: Path) -> None:
    env = dict(emu.storage_env())
    wrong = tmp_path / "wrong.token"
    wrong.write_text("not-the-secret\n")
    env["CLOUDSDK_AUTH_ACCESS_TOKEN_FILE"] = str(wrong)
    planted = tmp_path / "planted.txt"
    planted.write_text("planted")
    refused = gcloud(emu, "cp", str(planted), "gs://stg/planted.txt", env=env)
    assert refused.returncode != 0 and b"403" in refused.stderr
    assert not (emu.root / "gcs" / "stg" / "planted.txt").exists()
    assert gcloud(emu, "cat", "gs://stg/hello.txt", env=env).returncode != 0
