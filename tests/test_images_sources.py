"""images.sources: a trainer folder as a content-addressed object under the pipeline root."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from trainpool.cluster_env.gcs import LOCAL_ROOT_ENV
from trainpool.images import image_store, sources, storage
from trainpool.images.service import build_image

ROOT_URI = "gs://pipes/root"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The local store stands in for Cloud Storage (as in a local run's tasks)."""
    gcs = tmp_path / "store" / "gcs"
    (gcs / "pipes").mkdir(parents=True)
    monkeypatch.setenv(LOCAL_ROOT_ENV, str(gcs))
    return gcs


def trainer(folder: Path, loss: str = "0.5") -> Path:
    (folder / "trainer").mkdir(parents=True)
    (folder / "trainer" / "__init__.py").write_text("")
    (folder / "trainer" / "task.py").write_text(f"print('loss', {loss})\n")
    (folder / ".env").write_text("SECRET=1\n")  # kept out, as from any build context
    return folder


def test_identical_content_gives_the_identical_uri_and_one_upload(
    store: Path, tmp_path: Path
) -> None:
    first = sources.upload(trainer(tmp_path / "a"), ROOT_URI)
    obj = Path(storage.local_root() or "") / "pipes" / first.removeprefix("gs://pipes/")
    stamp = obj.stat().st_mtime_ns
    again = sources.upload(trainer(tmp_path / "b"), ROOT_URI)  # same files, other folder
    assert again == first and obj.stat().st_mtime_ns == stamp, "uploaded once"
    assert first.startswith(f"{ROOT_URI}/trainpool/sources/") and first.endswith(".tar.gz")
    with tarfile.open(fileobj=io.BytesIO(obj.read_bytes())) as tar:
        assert sorted(tar.getnames()) == ["trainer/__init__.py", "trainer/task.py"]


def test_one_byte_changes_the_uri_and_the_image(store: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = sources.upload(trainer(tmp_path / "a"), ROOT_URI)
    second = sources.upload(trainer(tmp_path / "b", loss="0.6"), ROOT_URI)
    assert first != second
    built = [
        build_image(uri, backend="local", root=home, log=lambda _: None) for uri in (first, second)
    ]
    assert built[0].digest != built[1].digest and not built[1].cached
    again = build_image(first, backend="local", root=home, log=lambda _: None)
    assert again.cached and again.image_uri == built[0].image_uri, "unchanged: image re-used"


def test_the_build_reads_the_object_not_a_folder(store: Path, tmp_path: Path) -> None:
    uri = sources.upload(trainer(tmp_path / "a"), ROOT_URI)
    with pytest.raises(ValueError, match=r"source_dir: 'gs://pipes/root/x/' is not a packed"):
        build_image("gs://pipes/root/x/", backend="local", root=tmp_path / "h")
    missing = uri.replace(uri.rsplit("/", 1)[1], "0" * 64 + ".tar.gz")
    with pytest.raises(FileNotFoundError, match="no such object"):
        build_image(missing, backend="local", root=tmp_path / "h")


def test_a_parameter_that_is_not_a_folder_is_refused(store: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"source_dir: 'nowhere/x' is not a folder here"):
        sources.upload_param("source_dir", "nowhere/x", ROOT_URI)
    assert sources.upload_param("source_dir", "gs://b-1/s.tar.gz", ROOT_URI) == "gs://b-1/s.tar.gz"
    assert list(store.rglob("*.tar.gz")) == [], "nothing uploaded"


@pytest.mark.parametrize(
    ("name", "link"), [("../escaped.txt", ""), ("/abs.txt", ""), ("trainer/out", "../../etc")]
)
def test_unpack_refuses_members_outside_the_folder(
    store: Path, tmp_path: Path, name: str, link: str
) -> None:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        tar.addfile(tarfile.TarInfo("trainer/ok.py"), io.BytesIO(b""))
        info = tarfile.TarInfo(name)
        if link:
            info.type, info.linkname = tarfile.SYMTYPE, link
            tar.addfile(info)
        else:
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    uri = f"{ROOT_URI}/trainpool/sources/{'1' * 64}.tar.gz"
    storage.write(uri, data.getvalue())
    with pytest.raises(sources.UnsafeArchive, match=f"member '{name}' would land outside"):
        sources.unpack(uri, tmp_path / "dest")
    assert not (tmp_path / "dest").exists(), "nothing written"


def test_upload_source_prints_the_uri_the_sdk_passes(store: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from trainpool.cli import app

    folder = trainer(tmp_path / "a")
    result = CliRunner().invoke(app, ["upload-source", str(folder), "--pipeline-root", ROOT_URI])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == sources.upload(folder, ROOT_URI)
    refused = CliRunner().invoke(app, ["upload-source", str(folder), "--pipeline-root", "/x"])
    assert refused.exit_code == 2
    assert "pipeline_root: '/x' is not a gs:// URI" in refused.stderr


def planted_archive(marker: Path) -> bytes:
    """Another user's trainer, written at someone else's content address."""
    code = f"open({str(marker)!r}, 'w').write('planted ran')\nprint('loss', 0.0)\n".encode()
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        for name, content in (("trainer/__init__.py", b""), ("trainer/task.py", code)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(content), 0o644
            tar.addfile(info, io.BytesIO(content))
    return data.getvalue()


def test_a_planted_object_at_the_content_address_is_replaced_and_never_runs(
    store: Path, tmp_path: Path
) -> None:
    folder = trainer(tmp_path / "a")
    uri = sources.upload(folder, ROOT_URI)
    marker = tmp_path / "PLANTED"
    storage.write(uri, planted_archive(marker))  # as if another user wrote it there

    said: list[str] = []
    again = sources.upload(folder, ROOT_URI, say=said.append)  # the owner's next run
    assert again == uri and len(said) == 1
    assert "hash to" in said[0] and "not the digest its name says" in said[0]
    assert "replaced it with the files of" in said[0]
    assert storage.read(uri) == sources.pack(folder)[1]

    home = tmp_path / "home"
    built = build_image(uri, backend="local", root=home, log=lambda _: None)
    image = image_store.lookup(built.image_uri, home)
    assert image is not None
    ran = subprocess.run(
        [str(image.python), "-m", "trainer.task"],
        cwd=image.context_dir,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert ran.stdout.strip() == "loss 0.5" and not marker.exists()


def test_an_object_changed_after_upload_is_refused_at_build(store: Path, tmp_path: Path) -> None:
    uri = sources.upload(trainer(tmp_path / "a"), ROOT_URI)
    storage.write(uri, planted_archive(tmp_path / "PLANTED"))
    with pytest.raises(sources.SourceMismatch, match="refused") as refused:
        build_image(uri, backend="local", root=tmp_path / "home", log=lambda _: None)
    assert uri in str(refused.value) and "source_dir" in str(refused.value)
    assert not (tmp_path / "home" / "images").exists() and not (tmp_path / "PLANTED").exists()
    with pytest.raises(sources.SourceMismatch):
        sources.unpack(uri, tmp_path / "dest")
    assert not (tmp_path / "dest").exists()


def test_the_same_files_in_other_bytes_are_the_same_source(store: Path, tmp_path: Path) -> None:
    folder = trainer(tmp_path / "a")
    uri = sources.upload(folder, ROOT_URI)
    with tarfile.open(fileobj=io.BytesIO(sources.pack(folder)[1]), mode="r:gz") as tar:
        recompressed = io.BytesIO()
        with tarfile.open(fileobj=recompressed, mode="w:gz", compresslevel=1) as out:
            for member in tar.getmembers():
                member.mtime = 12345  # not part of the digest
                out.addfile(member, tar.extractfile(member))
    storage.write(uri, recompressed.getvalue())
    said: list[str] = []
    assert sources.upload(folder, ROOT_URI, say=said.append) == uri and said == []
    assert storage.read(uri) == recompressed.getvalue(), "kept: its files are the digest's"
    assert sources.mismatch(uri.replace(uri[-20:], "x.tar.gz"), b"") is not None
