"""Every path under a local store root comes from trainpool.home."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainpool.home import Home, JobFiles


def test_the_layout_of_a_root(tmp_path: Path) -> None:
    home = Home(tmp_path)
    assert home.gcs == tmp_path / "gcs" and home.database == tmp_path / "emulator.sqlite"
    assert home.lock.name == "emulator.lock" and home.socket.name == "emulator.sock"
    job = home.job("1000")
    assert job.dir == tmp_path / "jobs" / "1000"
    assert job.metric_file() == job.dir / "hypertune" / "workerpool0-0.metrics"
    assert job.trial(2).replica_log("workerpool1-0") == job.dir / "trial-2" / "workerpool1-0.log"
    assert home.pipeline_run("p-1") == tmp_path / "pipelines" / "p-1"


def test_log_files_come_job_log_first_then_replicas_then_trials_by_number(tmp_path: Path) -> None:
    files = JobFiles(tmp_path)
    for rel in ("trial-10/job.log", "trial-2/workerpool0-0.log", "workerpool1-0.log", "job.log"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    assert [str(p.relative_to(tmp_path)) for p in files.log_files()] == [
        "job.log",
        "workerpool1-0.log",
        "trial-2/workerpool0-0.log",
        "trial-10/job.log",
    ]


def test_the_default_root_is_trainpool_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRAINPOOL_HOME", str(tmp_path))
    assert Home.default().root == tmp_path
    monkeypatch.delenv("TRAINPOOL_HOME")
    assert Home.default().root == Path(".trainpool")
