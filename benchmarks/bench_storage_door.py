"""The storage door's memory under a large upload: streamed, so the emulator stays flat.

Run: ``python3 benchmarks/bench_storage_door.py [--size-mb 800] [--no-gcloud]``.

Starts ``trainpool emulator`` as its own process on a fresh root (its storage door on by
default), reads ``STORAGE_EMULATOR_HOST`` and gcloud's settings from what it prints, and
sends one ``--size-mb`` object four ways: one ``uploadType=media`` POST streamed from the
file (the whole object in one request body), google-cloud-storage's
``upload_from_filename`` (a resumable session in 100 MiB chunks), ``gcloud storage cp``
(a resumable session, gcloud's own chunking; skipped without gcloud), and a download of it.
For each it prints the emulator's peak resident memory (``VmHWM``, reset before each step
through ``/proc/PID/clear_refs`` where the kernel allows) and the step's time. Before this
change one 800 MB upload took the emulator from 168 MB to 932 MB (the body was buffered).
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def reset_peak(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def start(root: Path) -> tuple[subprocess.Popen[str], dict[str, str]]:
    here = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": f"{here}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainpool.cli", "emulator", "--root", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    found: dict[str, str] = {}
    assert proc.stderr is not None
    while "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE" not in found:
        line = proc.stderr.readline()
        if not line:
            raise RuntimeError("the emulator ended before it printed its addresses")
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").strip().partition("=")
            found[name] = value
    return proc, found


def media_post(address: str, path: Path, name: str) -> None:
    where = urlsplit(address)
    conn = http.client.HTTPConnection(where.hostname or "", where.port, timeout=600)
    with path.open("rb") as body:
        conn.request(
            "POST",
            f"{where.path}/upload/storage/v1/b/bench/o?uploadType=media&name={name}",
            body=body,
            headers={"Content-Length": str(path.stat().st_size)},
        )
        answer = conn.getresponse()
        answer.read()
    assert answer.status == 200, answer.status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=800)
    parser.add_argument("--no-gcloud", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-storage-"))
    proc = None
    try:
        data = work / "object.bin"
        with data.open("wb") as out:
            for _ in range(args.size_mb):
                out.write(os.urandom(1 << 20))
        proc, env = start(work / "root")
        (work / "root" / "gcs" / "bench").mkdir(parents=True)
        os.environ.update(env)
        from google.cloud import storage  # type: ignore[attr-defined]

        bucket = storage.Client(project="bench").bucket("bench")
        gcloud = None if args.no_gcloud else shutil.which("gcloud")
        config = work / "gcloud-config"
        config.mkdir()
        gcloud_env = {**os.environ, "CLOUDSDK_CONFIG": str(config), "CLOUDSDK_CORE_PROJECT": "p"}

        def by_gcloud() -> None:
            assert gcloud is not None
            cmd = [gcloud, "storage", "cp", str(data), "gs://bench/gcloud.bin"]
            subprocess.run(cmd, env=gcloud_env, check=True, capture_output=True, timeout=900)

        steps = [
            (
                "upload: one media POST",
                lambda: media_post(env["STORAGE_EMULATOR_HOST"], data, "media.bin"),
            ),
            (
                "upload: client, resumable 100 MiB chunks",
                lambda: bucket.blob("client.bin", chunk_size=100 << 20).upload_from_filename(
                    str(data)
                ),
            ),
        ]
        if gcloud:
            steps.append(("upload: gcloud storage cp", by_gcloud))
        steps.append(
            (
                "download: client",
                lambda: bucket.blob("client.bin").download_to_filename(str(work / "back.bin")),
            )
        )
        time.sleep(1)
        base = status_kb(proc.pid, "VmRSS")
        print(
            f"object: {args.size_mb} MB; emulator pid {proc.pid}, "
            f"resident at rest {base / 1024:.0f} MB"
        )
        print(f"{'step':<44}{'peak RSS MB':>12}{'after MB':>10}{'seconds':>9}{'MB/s':>8}")
        resettable = True
        for label, step in steps:
            resettable = reset_peak(proc.pid) and resettable
            started = time.monotonic()
            step()
            took = time.monotonic() - started
            peak, after = status_kb(proc.pid, "VmHWM"), status_kb(proc.pid, "VmRSS")
            print(
                f"{label:<44}{peak / 1024:>12.0f}{after / 1024:>10.0f}"
                f"{took:>9.1f}{args.size_mb / took:>8.0f}"
            )
        stored = work / "root" / "gcs" / "bench"
        same = all(
            (stored / name).stat().st_size == data.stat().st_size
            for name in ("media.bin", "client.bin", *(["gcloud.bin"] if gcloud else []))
        )
        print(f"stored objects whole: {same}; peak reset per step: {resettable}")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
