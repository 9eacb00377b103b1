"""Cloud Build over loopback: gcp-storage-emulator for GCS, the trainpool emulator for builds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.storage import storage_emulator
from google.cloud.devtools.cloudbuild_v1 import types

import trainpool.emulator as emulator
from trainpool.emulator import Faults
from trainpool.emulator.builds.build_runs import HOLD_ENV
from trainpool.images import builder, image_store
from trainpool.images.cloud_build import MARKERS, cloud_build_client
from trainpool.images.service import build_image

# the local image store's builder: what builds without a container engine (the engine's
# builds: test_emulator_jobs_containers.py)
pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("no_container_engine")]
PROJECT = "demo"
BUCKET = "demo_cloudbuild"
CLI = "from trainpool.cli import main; main()"
REPO = "us-central1-docker.pkg.dev/demo/trainpool/tiny"


@pytest.fixture
def gcs(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with storage_emulator(monkeypatch, BUCKET) as url:
        yield url


@pytest.fixture
def emu(tmp_path: Path, gcs: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path / "emu") as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        yield emu


def tiny(root: Path) -> Path:
    root.mkdir()
    (root / "train.py").write_text("print('tiny trainer')\n")
    return root


def test_build_pushes_then_skips_the_cached_rebuild(tmp_path: Path, emu: emulator.Emulator) -> None:
    lines: list[str] = []
    kwargs: dict[str, Any] = dict(
        image_uri=REPO, backend="cloud", project=PROJECT, log=lines.append
    )
    first = build_image(str(tiny(tmp_path / "src")), **kwargs).to_dict()
    digest = str(first["contextDigest"])
    tag = f"ctx-{digest.removeprefix('sha256:')[:20]}"
    logs_line = next(line for line in lines if " logs at " in line)
    build_id = logs_line.split()[2].rstrip(":")
    assert f"uploaded the build context to gs://{BUCKET}/trainpool/contexts/" in "\n".join(lines)
    assert first == {
        "imageUri": f"{REPO}:{tag}@{digest}",
        "cached": False,
        "backend": "cloud-build",
        "contextDigest": digest,
        "tag": tag,
        "dockerfile": "generated",
        "notes": [f"Cloud Build {build_id}: SUCCESS, pushed {REPO}:{tag}@{digest}"],
    }
    log_url = (emu.root / "builds" / build_id / "log.txt").as_uri()
    assert logs_line == f"Cloud Build {build_id}: logs at {log_url}"
    build = cloud_build_client().get_build(project_id=PROJECT, id=build_id)
    assert build.status == types.Build.Status.SUCCESS
    assert [(i.name, i.digest) for i in build.results.images] == [(f"{REPO}:{tag}", digest)]
    assert build.steps[0].args == ["build", "--tag", f"{REPO}:{tag}", "."]
    # "pushed": the emulator can now run a job from that image
    image = image_store.lookup(str(first["imageUri"]), emu.root)
    assert image is not None and image.argv() == [str(image.python), "train.py"]

    lines.clear()
    second = build_image(str(tmp_path / "src"), **kwargs).to_dict()
    assert second == {**first, "cached": True, "notes": []}
    assert lines == [
        f"{REPO}:{tag}: an image of this exact context exists (cloud-build); build skipped"
    ]
    from google.cloud import storage  # type: ignore[attr-defined]

    names = sorted(b.name for b in storage.Client(project=PROJECT).list_blobs(BUCKET))
    raw = digest.removeprefix("sha256:")
    assert names == [f"{MARKERS}/{raw}.json"]  # the uploaded context went once built


def test_failed_build_reports_status_and_logs(tmp_path: Path, emu: emulator.Emulator) -> None:
    src = tiny(tmp_path / "src")
    (src / "requirements.txt").write_text("--no-such-pip-option\n")
    (src / "Dockerfile").write_text(
        "FROM python:3.11\nCOPY . /app\nRUN pip install -r /app/requirements.txt\n"
    )
    with pytest.raises(RuntimeError, match=r"build \S+ ended FAILURE: .*; logs: file://"):
        build_image(str(src), image_uri=REPO, backend="cloud", project=PROJECT, log=lambda _: None)


def sigterm_build_image(
    tmp_path: Path, gcs: str, after: str, faults: Faults | None = None
) -> tuple[str, str]:
    """Run `trainpool build-image` against an emulator that holds builds queued, SIGTERM it
    0.5 s after it prints a line containing ``after``; its exit and the build's final state
    are checked here. Returns the build id and the rest of its stderr."""
    os.environ[HOLD_ENV] = "30"
    try:
        emu = emulator.start(tmp_path / "emu", faults=faults)
    finally:
        del os.environ[HOLD_ENV]
    with emu:
        env = dict(os.environ, VERTEX_AI_EMULATOR_HOST=emu.address, STORAGE_EMULATOR_HOST=gcs)
        cmd = [sys.executable, "-c", CLI, "build-image", str(tiny(tmp_path / "src"))]
        cmd += ["--image", REPO, "--project", PROJECT]
        proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        seen = ""
        while after not in seen:
            line = proc.stderr.readline()
            assert line, f"build-image ended before printing {after!r}"
            seen += line
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        rest = seen + proc.stderr.read()
        assert proc.wait(timeout=30) == 1, rest
        assert "build cancelled: SIGTERM received" in rest
        build_id = rest.split("Cloud Build ")[1].split(":")[0]
        os.environ["VERTEX_AI_EMULATOR_HOST"] = emu.address
        try:
            build = cloud_build_client().get_build(project_id=PROJECT, id=build_id)
        finally:
            del os.environ["VERTEX_AI_EMULATOR_HOST"]
        assert build.status == types.Build.Status.CANCELLED
        return build_id, rest


def test_sigterm_cancels_the_build(tmp_path: Path, gcs: str) -> None:
    build_id, rest = sigterm_build_image(tmp_path, gcs, after="logs at")
    assert f"cancelling build {build_id}" in rest


def test_sigterm_during_create_cancels_the_build_it_made(tmp_path: Path, gcs: str) -> None:
    """CreateBuild answers 2 s late; SIGTERM lands while the launcher waits for it."""
    faults = Faults(delay_s=2.0, methods=("CreateBuild",))
    build_id, rest = sigterm_build_image(
        tmp_path, gcs, after="uploaded the build context", faults=faults
    )
    assert f"cancelling build {build_id}" in rest


def tiny_wheel(folder: Path) -> Path:
    """A pure-Python wheel ``tinypkg_tp`` 1.0, written by hand (no build backend offline)."""
    import base64
    import hashlib
    import zipfile

    folder.mkdir()
    files = {
        "tinypkg_tp/__init__.py": b"",
        "tinypkg_tp-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg-tp\n"
        b"Version: 1.0\n",
        "tinypkg_tp-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("tinypkg_tp-1.0.dist-info/RECORD,,")
    files["tinypkg_tp-1.0.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = folder / "tinypkg_tp-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return wheel


def test_a_build_cancelled_while_working_pushes_nothing(
    tmp_path: Path, emu: emulator.Emulator
) -> None:
    # The emulator's build ran to its end after a Cancel and still tagged the image
    # names in the local store, so a job could run from a cancelled build's image.
    # Here pip waits on a loopback index, held until the build has been cancelled.
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from trainpool.images import builder
    from trainpool.images.cloud_build import CloudBuildBackend, build_request

    asked, release = threading.Event(), threading.Event()

    class SlowIndex(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.set()
            release.wait(60)
            self.send_error(404)

        def log_message(self, *_: object) -> None:
            pass

    index = ThreadingHTTPServer(("127.0.0.1", 0), SlowIndex)
    threading.Thread(target=index.serve_forever, daemon=True).start()
    try:
        wheels = tiny_wheel(tmp_path / "wheels").parent
        src = tiny(tmp_path / "src")
        (src / "requirements.txt").write_text(
            f"--index-url http://127.0.0.1:{index.server_address[1]}/simple\n"
            f"--find-links {wheels}\ntinypkg-tp\n"
        )
        ctx, _ = builder.prepare(builder.BuildRequest(source_dir=src, repository=REPO))
        image = f"{REPO}:ctx-{ctx.digest[:20]}"
        backend = CloudBuildBackend(PROJECT, log=lambda _: None)
        request = build_request(image, BUCKET, backend.upload(ctx), {})
        build_id = backend.client.create_build(project_id=PROJECT, build=request).metadata.build.id
        assert asked.wait(60), "the build never reached pip"
        backend.cancel(build_id)
    finally:
        release.set()
    log = emu.root / "builds" / build_id / "log.txt"
    deadline = time.monotonic() + 60
    while not any(end in log.read_text() for end in ("DONE", "nothing pushed", "ERROR")):
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
    index.shutdown()
    index.server_close()
    build = backend.client.get_build(project_id=PROJECT, id=build_id)
    assert build.status == types.Build.Status.CANCELLED
    assert list(build.results.images) == []
    assert image_store.lookup(image, emu.root) is None
    assert "build ended CANCELLED while it ran: nothing pushed" in log.read_text()


def test_the_wait_has_a_deadline_and_cancels_what_it_gave_up_on(
    tmp_path: Path, gcs: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainpool.images.cloud_build import BuildFailed, CloudBuildBackend
    from trainpool.images.context import BuildContext, collect

    monkeypatch.setenv(HOLD_ENV, "30")  # every build stays QUEUED
    with emulator.start(tmp_path / "emu") as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        backend = CloudBuildBackend(PROJECT, poll_s=0.05, log=lambda _: None, wait_s=0.5)
        ctx = BuildContext.of(collect(tiny(tmp_path / "src")))
        started = time.monotonic()
        with pytest.raises(BuildFailed, match=r"still QUEUED after 0.5s: cancelled"):
            backend.build(ctx, f"{REPO}:t")
        assert time.monotonic() - started < 25  # the build is held 30 s: it was not waited for
        from google.cloud import storage  # type: ignore[attr-defined]

        assert list(storage.Client(project=PROJECT).list_blobs(BUCKET)) == []


def test_a_build_running_when_the_server_died_ends_failure_after_a_restart(
    tmp_path: Path, gcs: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainpool.images.context import BuildContext, collect

    monkeypatch.setenv(HOLD_ENV, "30")
    root = tmp_path / "emu"
    with emulator.start(root) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        backend_client = cloud_build_client()
        from trainpool.images.cloud_build import CloudBuildBackend, build_request

        obj = CloudBuildBackend(PROJECT, log=lambda _: None).upload(
            BuildContext.of(collect(tiny(tmp_path / "src")))
        )
        op = backend_client.create_build(
            project_id=PROJECT, build=build_request(f"{REPO}:t", BUCKET, obj, {})
        )
        build_id = op.metadata.build.id
    monkeypatch.setenv(HOLD_ENV, "0")
    with emulator.start(root) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        after = cloud_build_client().get_build(project_id=PROJECT, id=build_id)
    assert after.status == types.Build.Status.FAILURE
    assert after.status_detail.startswith("The emulator ended while this build was running")


def test_the_default_source_bucket_is_made_on_first_use_as_gcloud_builds_submit_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gcloud builds submit --gcs-source-staging-dir``: "If the default bucket is used and
    it does not exist, it will be created"; a bucket the caller names is never made."""
    from google.cloud import storage

    from trainpool.images.cloud_build import CloudBuildBackend

    with emulator.start(tmp_path / "emu", storage=True) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", emu.storage_address or "")
        context, _ = builder.prepare(
            builder.BuildRequest(source_dir=tiny(tmp_path / "src"), repository=REPO)
        )
        CloudBuildBackend("fresh-project", log=lambda _: None).upload(context)
        assert storage.Client().bucket("fresh-project_cloudbuild").exists()
        named = CloudBuildBackend("fresh-project", bucket="not-made-here", log=lambda _: None)
        with pytest.raises(Exception, match="not-made-here"):
            named.upload(context)
