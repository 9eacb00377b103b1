"""Every replica starts from a pristine Python of its image, as a container does
(emulator/jobs/replica_python.py).

On Vertex each replica is a container started from its image; what it installs stays in
that container. The SDK relies on it: ``CustomJob.from_local_script`` on an image that is
not prebuilt runs ``pip install --upgrade pip && pip3 install -q --user PKG && python3 -m
MODULE`` (googleapis/python-aiplatform ``google/cloud/aiplatform/jobs.py``), and Kubernetes
restarts a container "with a clean state" (https://kubernetes.io/docs/concepts/storage/volumes/).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import site
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from google.cloud import aiplatform
from google.cloud.aiplatform import jobs
from google.cloud.aiplatform_v1.types.job_state import JobState

from trainpool.emulator.jobs import gcs_mount
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(180)
PACKAGE = "hello_pristine"


@pytest.fixture
def emu(tmp_path: Path, sdk_emulator: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The SDK pointed at a fresh emulator (``sdk_emulator``), with bucket ``bkt``."""
    monkeypatch.setattr(jobs, "_JOB_WAIT_TIME", 0.5)
    (tmp_path / "root/gcs/bkt").mkdir(parents=True)
    return sdk_emulator


def wheel(folder: Path) -> Path:
    """A pure-Python wheel of one module, made here (pip installs it with ``--no-index``)."""
    info = f"{PACKAGE}-1.0.dist-info"
    files = {
        f"{PACKAGE}.py": "SEEN = True\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    rows = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        rows.append(f"{name},sha256={digest.decode()},{len(text.encode())}\n")
    files[f"{info}/RECORD"] = "".join(rows) + f"{info}/RECORD,,\n"
    path = folder / f"{PACKAGE}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def run(client: Any, argv: list[str], image: str = "python:3.11") -> Any:
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": image, "command": argv},
    }
    job = {"display_name": "pristine", "job_spec": {"worker_pool_specs": [pool]}}
    created = client.create_custom_job(parent=PARENT, custom_job=job)
    return wait_job(client.get_custom_job, created.name, 120)


def test_what_a_start_installs_is_gone_at_the_next_start(emu: Any, tmp_path: Path) -> None:
    # the first start installs the package twice (--user as a container's root user would,
    # then into its Python), then exits 3: not permanent, so Vertex restarts the replica in
    # place; the second start must not see it (exit 1, permanent, would fail the job)
    found = wheel(tmp_path)
    started = Path(emu.root) / "gcs/bkt/started"
    where = f"python3 -c 'import {PACKAGE}; print({PACKAGE}.__file__)'"
    script = (
        f"if python3 -c 'import {PACKAGE}' 2>/dev/null; then echo seen; exit 1; fi; "
        f"if [ -e {started} ]; then echo clean; exit 0; fi; "
        f"pip install -q --user --no-index {found} && {where} && "
        f"pip install -q --no-index --ignore-installed {found} && {where} && "
        f"touch {started} && exit 3"
    )
    done = run(job_client("us-central1"), ["sh", "-c", script])
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error.message
    job_dir = Path(emu.root) / "jobs" / done.name.rsplit("/", 1)[1]
    log = (job_dir / "workerpool0-0.log").read_text()
    assert f"{job_dir}/home/workerpool0-0/.local/lib/" in log  # --user: its own HOME
    assert f"{job_dir}/python/workerpool0-0/lib/" in log  # the rest: its own Python
    assert log.rstrip().endswith("clean")
    assert "restarting it in place" in (job_dir / "job.log").read_text()


def test_the_emulators_interpreter_named_by_path_is_not_the_one_that_runs(
    emu: Any, tmp_path: Path
) -> None:
    out = tmp_path / "seen.json"
    code = (
        "import json, sys; "
        f"json.dump({{'prefix': sys.prefix, 'path': sys.path}}, open({str(out)!r}, 'w'))"
    )
    done = run(job_client("us-central1"), [sys.executable, "-c", code])
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error.message
    seen = json.loads(out.read_text())
    job_dir = Path(emu.root).resolve() / "jobs" / done.name.rsplit("/", 1)[1]
    assert seen["prefix"] == str(job_dir / "python/workerpool0-0")
    emulators = set(site.getsitepackages())
    assert not emulators & set(seen["path"]), seen["path"]
    log = (job_dir / "job.log").read_text()
    assert "workerpool0: this machine's clean Python" in log
    assert "none of the emulator's packages" in log


def test_a_replica_cannot_write_into_the_emulators_python(emu: Any, tmp_path: Path) -> None:
    if gcs_mount.mount().why or gcs_mount.mount().read_only_why:
        pytest.skip("replicas get no read-only mounts on this machine")
    probe = Path(sys.prefix) / "trainpool-replica-was-here"
    done = run(job_client("us-central1"), ["sh", "-c", f"touch {probe}; echo $?"])
    assert done.state == JobState.JOB_STATE_SUCCEEDED
    assert not probe.exists()
    job_dir = Path(emu.root) / "jobs" / done.name.rsplit("/", 1)[1]
    assert "Read-only file system" in (job_dir / "workerpool0-0.log").read_text()


def snapshot() -> dict[str, Any]:
    """The emulator's own Python installation: every file with its size, modification time and
    mode, and the SHA-256 of pip's files and of its commands (what ``pip install --upgrade
    pip`` rewrites); the user site of the emulator's user too. Byte-code caches are left out:
    the emulator's own imports write them."""
    files: dict[str, Any] = {}
    roots = {sys.prefix, sys.base_prefix, site.getuserbase()}
    for root in sorted(roots):
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in names:
                path = os.path.join(folder, name)
                st = os.lstat(path)
                entry: tuple[Any, ...] = (st.st_size, st.st_mtime_ns, st.st_mode)
                if ("/site-packages/pip" in path or "/bin/" in path) and os.path.isfile(path):
                    entry += (hashlib.sha256(Path(path).read_bytes()).hexdigest(),)
                files[path] = entry
    return files


@pytest.mark.slow
def test_from_local_script_upgrades_pip_and_installs_with_user_in_its_own_python(
    emu: Any, tmp_path: Path
) -> None:
    script = tmp_path / "train.py"
    script.write_text("import pip\nprint('trained with pip', pip.__version__)\n")
    before = snapshot()
    job = aiplatform.CustomJob.from_local_script(
        display_name="local-script",
        script_path=str(script),
        container_uri="python:3.11",
        project="demo",
        location="us-central1",
        staging_bucket="gs://bkt/staging",
    )
    job.run()
    assert job.state.name == "JOB_STATE_SUCCEEDED", job.gca_resource.error
    job_dir = Path(emu.root) / "jobs" / job.name
    log = (job_dir / "workerpool0-0.log").read_text()
    assert "trained with pip" in log and "trained with pip 23." not in log  # upgraded here
    assert "Can not perform a '--user' install" not in log
    after = snapshot()
    assert before == after, sorted(set(before.items()) ^ set(after.items()))[:10]
    # the next job on the same image starts from the image, not from what the last one did
    module = "aiplatform_custom_trainer_script"
    check = (
        "import importlib.util, pip, sys; "
        f"print('seen' if importlib.util.find_spec({module!r}) else 'clean', pip.__version__); "
        f"sys.exit(1 if importlib.util.find_spec({module!r}) else 0)"
    )
    again = run(job_client("us-central1"), ["python3", "-c", check])
    assert again.state == JobState.JOB_STATE_SUCCEEDED, again.error.message
    again_log = Path(emu.root) / "jobs" / again.name.rsplit("/", 1)[1] / "workerpool0-0.log"
    assert again_log.read_text().startswith("clean 23.")
