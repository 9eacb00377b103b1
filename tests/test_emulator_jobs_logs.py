"""Reading a job's logs: read and follow agree on every line, the last one included."""

from __future__ import annotations

from pathlib import Path

from trainpool.emulator.jobs import logs
from trainpool.home import JobFiles


def test_follow_prints_a_last_line_without_newline_once_the_job_ends(tmp_path: Path) -> None:
    # A replica that crashes mid-line (or prints with end="") leaves no final newline;
    # read() shows that line, so follow() must too once the job has ended.
    (tmp_path / "job.log").write_text("started\n")
    (tmp_path / "workerpool0-0.log").write_text("step 1\nTraceback: boom")
    calls = iter([False, True])
    followed = list(logs.follow(JobFiles(tmp_path), lambda: next(calls), poll_s=0.01))
    assert followed == list(logs.read(JobFiles(tmp_path)))
    assert followed[-1] == "[workerpool0-0] Traceback: boom"


def test_follow_holds_back_a_partial_line_while_the_job_runs(tmp_path: Path) -> None:
    log = tmp_path / "workerpool0-0.log"
    log.write_text("loss=0.5\nloss=0.")
    state = {"polls": 0}

    def finished() -> bool:
        state["polls"] += 1
        if state["polls"] == 2:
            with open(log, "a") as handle:
                handle.write("4\n")
        return state["polls"] >= 2

    assert list(logs.follow(JobFiles(tmp_path), finished, poll_s=0.01)) == [
        "[workerpool0-0] loss=0.5",
        "[workerpool0-0] loss=0.4",
    ]
