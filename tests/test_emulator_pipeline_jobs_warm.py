"""GCPC's launchers started ahead of their tasks (trainpool.emulator.pipeline_jobs.warm) end as cold
ones do.

The launcher is GCPC's own (the installed package), run as ``python3 -u -m ...launcher`` in
a task's sandbox (trainpool.emulator.pipeline_jobs.task_sandboxes), cold and through a waiting
process;
what the run sees of a task (its exit status, its output) must not tell them apart.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from google_cloud_pipeline_components.v1.custom_job import CustomTrainingJobOp
from kfp import compiler, dsl

from trainpool.emulator.pipeline_jobs import warm
from trainpool.emulator.pipeline_jobs.task_sandboxes import TaskSandboxes
from trainpool.home import Home
from trainpool.kfp_local.launching import TaskStart
from trainpool.spec.pipeline_params import load_pipeline_spec

pytestmark = pytest.mark.timeout(120)
MODULE = "google_cloud_pipeline_components.container.v1.custom_job.launcher"
IMAGE = "gcr.io/ml-pipeline/google-cloud-pipeline-components:2.22.0"
ARGS = ["--type", "CustomJob", "--project", "p", "--location", "us-central1"]
ARGS += ["--payload", "{}", "--gcp_resources", "resources.json"]
"""No emulator named, no credentials: the SDK raises, a traceback and exit status 1."""
POOLS = [
    {
        "machine_spec": {"machine_type": "n1-standard-4"},
        "replica_count": 1,
        "container_spec": {"image_uri": "python:3.11", "command": ["true"]},
    }
]


@dsl.pipeline(name="two-gcpc-jobs")
def two() -> None:
    first = CustomTrainingJobOp(display_name="one", worker_pool_specs=POOLS)
    CustomTrainingJobOp(display_name="two", worker_pool_specs=POOLS).after(first)


@pytest.fixture
def spec(tmp_path: Path) -> dict:
    compiler.Compiler().compile(two, str(tmp_path / "two.yaml"))
    return load_pipeline_spec(tmp_path / "two.yaml")


ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "CLOUDSDK_CONFIG": "/nonexistent"}


def task(task_id: int, env: dict[str, str] | None = None, command: list[str] | None = None):
    return TaskStart(
        "custom-training-job",
        task_id,
        IMAGE,
        command or ["python3", "-u", "-m", MODULE, *ARGS],
        dict(ENV if env is None else env),
        "launcher",
    )


def sandboxes(tmp_path: Path, spec: dict, name: str) -> TaskSandboxes:
    launcher = TaskSandboxes(Home(tmp_path / "root"))
    launcher.begin(spec, tmp_path / name, lambda image: dict(ENV))
    return launcher


def test_a_warm_launcher_ends_as_a_cold_one_does(
    tmp_path: Path, spec: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    said: dict[str, list[str]] = {"cold": [], "warm": []}
    codes = {}
    for name, switch in (("cold", "0"), ("warm", "1")):
        monkeypatch.setenv(warm.SWITCH_ENV, switch)
        launcher = sandboxes(tmp_path, spec, name)
        assert (launcher._waiting is not None) == (name == "warm")
        try:
            codes[name] = launcher.run(task(2), said[name].append)
        finally:
            launcher.end()
    assert codes == {"cold": 1, "warm": 1}
    lines = {name: [line for line in said[name] if line.strip()] for name in said}
    assert lines["warm"][-1] == lines["cold"][-1]
    assert "Traceback" in "\n".join(lines["warm"])


def test_a_task_unlike_the_waiting_process_starts_cold(tmp_path: Path, spec: dict) -> None:
    launcher = sandboxes(tmp_path, spec, "run")
    try:
        waiting = launcher._waiting
        assert waiting is not None
        other = launcher.run(task(2, env={**ENV, "ANOTHER": "value"}), lambda line: None)
        assert other == 1  # it ran, cold: its variables differ
        assert launcher._waiting is waiting  # still there for a task like it
        assert launcher.run(task(3), lambda line: None) == 1
        assert launcher._waiting is not waiting  # the second GCPC task's, started ahead
    finally:
        launcher.end()


def test_the_waiting_process_ends_with_the_run(tmp_path: Path, spec: dict) -> None:
    launcher = sandboxes(tmp_path, spec, "run")
    waiting = launcher._waiting
    assert waiting is not None
    launcher.end()
    assert waiting.replica.wait(10) is not None


def test_the_switch_starts_every_task_cold(
    tmp_path: Path, spec: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(warm.SWITCH_ENV, "0")
    launcher = sandboxes(tmp_path, spec, "run")
    try:
        assert launcher._waiting is None
    finally:
        launcher.end()


def test_the_launchers_a_pipeline_runs_are_counted_by_task(tmp_path: Path) -> None:
    compiler.Compiler().compile(two, str(tmp_path / "two.yaml"))
    assert warm.launcher_tasks(load_pipeline_spec(tmp_path / "two.yaml")) == ([MODULE], 2)


def descendants(pid: int) -> list[int]:
    """Pids of ``pid``'s descendants (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def alive_descendants(pid: int) -> list[int]:
    """Descendants of ``pid`` that are not zombies."""
    found = []
    for child in descendants(pid):
        try:
            state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(child)
    return found


@pytest.mark.parametrize(
    ("how", "ahead"),
    [("SIGTERM", True), ("SIGKILL", True), ("SIGTERM", False)],
    ids=["SIGTERM-started-ahead", "SIGKILL-started-ahead", "SIGTERM-cold"],
)
def test_a_stopped_run_of_gcpc_tasks_leaves_no_launcher_behind(
    tmp_path: Path, how: str, ahead: bool
) -> None:
    """The first GCPC task runs in a process started ahead, the second one waits: SIGTERM
    reaches the running launcher (GCPC cancels its job and exits 0) and passes the waiting
    one by; no further task starts; the run ends both. SIGKILL: the guard that started them
    ends both within 5 s. Started cold, SIGTERM the same (SIGKILL of a cold task:
    tests/test_kfp_local_interrupt.py)."""
    code = "print('cancel me', flush=True); import time; time.sleep(300)"
    pools = [
        {
            "machine_spec": {"machine_type": "n1-standard-4"},
            "replica_count": 1,
            "container_spec": {"image_uri": "python:3.11", "command": ["python3", "-c", code]},
        }
    ]

    @dsl.pipeline(name="two-gcpc-jobs")
    def two():
        first = CustomTrainingJobOp(display_name="one", worker_pool_specs=pools)
        CustomTrainingJobOp(display_name="two", worker_pool_specs=pools).after(first)

    compiler.Compiler().compile(two, str(tmp_path / "two.yaml"))
    root = tmp_path / "root"
    env = {k: v for k, v in os.environ.items() if k != "VERTEX_AI_EMULATOR_HOST"}
    env[warm.SWITCH_ENV] = "1" if ahead else "0"
    run = subprocess.Popen(
        [sys.executable, "-c", "from trainpool.cli import main; main()", "run"]
        + [str(tmp_path / "two.yaml"), "--local", "--root", str(root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = root / "jobs" / "1000" / "workerpool0-0.log"
    deadline = time.monotonic() + 90
    while not (log.is_file() and "cancel me" in log.read_text()):
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)
    started = alive_descendants(run.pid)
    launchers = [p for p in started if MODULE.encode() in Path(f"/proc/{p}/cmdline").read_bytes()]
    waiting = [
        p for p in started if b"_run_module_as_main" in Path(f"/proc/{p}/cmdline").read_bytes()
    ]
    assert launchers, "the running task"
    assert bool(waiting) == ahead, "the next task's launcher, started ahead"
    if how == "SIGTERM":
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=60)
        assert run.returncode == 128 + signal.SIGTERM, (out, err)
        assert (
            "CustomJob projects/local-project/locations/us-central1/customJobs/1000: CANCELLED"
            in out
        )
        assert not (root / "jobs" / "1001").exists()  # the second task never ran
    else:
        run.kill()
        run.communicate(timeout=30)
    deadline = time.monotonic() + 5
    while any(Path(f"/proc/{p}").exists() for p in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = []
    for pid in started:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            left.append(Path(f"/proc/{pid}/cmdline").read_bytes()[:200])
    assert not left
