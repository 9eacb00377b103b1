"""GCPC's launchers started ahead of their tasks (trainpool.kfprun.warm) end as cold ones do.

The launcher is GCPC's own (the installed package), run as ``python3 -u -m ...launcher``
cold and through a waiting process; what the run sees of a task (its exit status, its
output) must not tell them apart.
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

from trainpool.kfprun import interrupt, warm
from trainpool.kfprun.task_guard import descendants
from trainpool.spec.pipeline_params import load_pipeline_spec

pytestmark = pytest.mark.timeout(120)
MODULE = "google_cloud_pipeline_components.container.v1.custom_job.launcher"


def launcher(*args: str) -> list[str]:
    return [sys.executable, "-u", "-m", MODULE, *args]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No emulator named, no credentials: GCPC's launcher fails the same way every time."""
    for name in ("VERTEX_AI_EMULATOR_HOST", "GOOGLE_APPLICATION_CREDENTIALS", warm.SWITCH_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        # the SDK raises (no credentials): a traceback and exit status 1 (argparse's exit
        # status 2 through a waiting process: test_a_task_unlike_the_waiting_process_starts_cold)
        (
            "--type",
            "CustomJob",
            "--project",
            "p",
            "--location",
            "us-central1",
            "--payload",
            "{}",
            "--gcp_resources",
            "resources.json",
        ),
    ],
)
def test_a_warm_launcher_ends_as_a_cold_one_does(
    here: Path, args: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    cold = subprocess.run(launcher(*args), capture_output=True, text=True, cwd=here)
    with warm.WarmLaunchers([MODULE], 1, dict(os.environ), str(here)) as launchers:
        code = launchers.run(launcher(*args), None)
    printed = capsys.readouterr().out.strip().splitlines()
    assert cold.returncode == 1
    assert code == cold.returncode
    expected = (cold.stdout + cold.stderr).strip().splitlines()
    assert printed[-1] == expected[-1]


def test_a_task_unlike_the_waiting_process_starts_cold(here: Path) -> None:
    with warm.WarmLaunchers([MODULE], 1, dict(os.environ), str(here)) as launchers:
        waiting = launchers._waiting
        assert waiting is not None
        assert launchers.run(launcher("--x"), {"ANOTHER": "value"}) is None  # env differs
        assert launchers.run([sys.executable, "-c", "pass"], None) is None  # no launcher
        assert launchers.run(["python3", "-u", "-m", MODULE], None) is None  # not this Python
        (here / "elsewhere").mkdir()
        os.chdir(here / "elsewhere")
        assert launchers.run(launcher("--x"), None) is None  # another working directory
        os.chdir(here)
        assert launchers._waiting is waiting  # still there for a task like it
        assert launchers.run(launcher("--x"), None) == 2
        assert launchers._waiting is None  # count 1: no second one started


def test_the_waiting_process_is_no_task_and_ends_with_the_run(here: Path) -> None:
    with warm.WarmLaunchers([MODULE], 3, dict(os.environ), str(here)) as launchers:
        waiting = launchers._waiting
        assert waiting is not None
        started = [waiting.pid, *descendants(waiting.pid)]
        assert not set(started) & set(interrupt.task_processes())
    assert waiting.returncode is not None
    assert not descendants(waiting.pid)
    for pid in started:
        with pytest.raises(OSError):
            os.kill(pid, 0)


def test_the_switch_starts_every_task_cold(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(warm.SWITCH_ENV, "0")
    with warm.WarmLaunchers([MODULE], 2, dict(os.environ), str(here)) as launchers:
        assert launchers._waiting is None
        assert launchers.run(launcher("--x"), None) is None


def test_the_launchers_a_pipeline_runs_are_counted_by_task(tmp_path: Path) -> None:
    pools = [
        {
            "machine_spec": {"machine_type": "n1-standard-4"},
            "replica_count": 1,
            "container_spec": {"image_uri": "python:3.11", "command": ["true"]},
        }
    ]

    @dsl.pipeline(name="two-gcpc-jobs")
    def two() -> None:
        first = CustomTrainingJobOp(display_name="one", worker_pool_specs=pools)
        CustomTrainingJobOp(display_name="two", worker_pool_specs=pools).after(first)

    compiler.Compiler().compile(two, str(tmp_path / "two.yaml"))
    assert warm.launcher_tasks(load_pipeline_spec(tmp_path / "two.yaml")) == ([MODULE], 2)


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
    one by; no further task starts; the run ends both. SIGKILL: the task guards end both
    within 5 s. Started cold, SIGTERM the same (SIGKILL of a cold task:
    tests/test_kfprun_interrupt.py)."""
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
