"""`trainpool schedule list | show | runs | pause | resume | delete` against the emulator,
with a schedule made by `trainpool submit --schedule` and fired by `trainpool clock advance`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.pipelines import compile_fixture
from typer.testing import CliRunner

import trainpool.emulator as emulator
from trainpool import config
from trainpool.cli import app

pytestmark = pytest.mark.timeout(120)

PARENT = "projects/demo-project/locations/us-central1"
TARGET = ["--project", "demo-project", "--location", "us-central1"]


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "gcs" / "demo-bucket").mkdir(parents=True)
    with emulator.start(tmp_path) as running:
        monkeypatch.setenv(config.EMULATOR_ENV, running.address)
        monkeypatch.setenv(config.HOME_ENV, str(tmp_path))
        yield tmp_path


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.stderr
    return str(result.stdout)


def test_a_nightly_schedule_fired_on_the_moved_clock_and_its_history(
    emu: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tiny = compile_fixture("tiny", tmp_path_factory.mktemp("tiny"))
    cli("clock", "advance", "--to", "2040-01-01T00:00:00Z")
    cli("submit", str(tiny), *TARGET, "--pipeline-root", "gs://demo-bucket/root")  # a hand run
    cli(
        "submit", str(tiny), *TARGET, "--pipeline-root", "gs://demo-bucket/root",
        "--schedule", "0 3 * * *", "--display-name", "nightly", "--allow-queueing",
        "--param", "pause=3",
    )  # fmt: skip
    first = cli("clock", "advance", "1d", "--wait")
    night1 = f"{PARENT}/pipelineJobs/tiny-20400101030000-1000"
    assert first.splitlines()[0] == f"schedule 1000 run of 2040-01-01T03:00:00Z started: {night1}"
    two = cli("clock", "advance", "2d")  # night 2 still runs when night 3 comes due
    assert "schedule 1000 run of 2040-01-03T03:00:00Z queued: max_concurrent_active_run_" in two
    cli("clock", "advance", "0s", "--wait")
    listed = cli("schedule", "list", *TARGET)
    assert listed.splitlines()[1].split() == [
        "1000", "ACTIVE", "2040-01-04", "03:00:00", "3/-", "0", "3", "*", "*", "*", "nightly",
    ]  # fmt: skip
    shown = cli("schedule", "show", "nightly", *TARGET)
    assert "runs started:           3 of unlimited" in shown
    assert "1 starting, 1 active; a run due at the limit is queued" in shown
    runs = cli("schedule", "runs", "nightly", *TARGET).splitlines()
    assert runs[0] == f"{PARENT}/schedules/1000 (nightly): ACTIVE, 3 run(s)"
    rows = [line.split()[:4] for line in runs[2:5]]
    assert [row[0] for row in rows] == [f"tiny-2040010{d}030000-1000" for d in (1, 2, 3)]
    assert {row[1] for row in rows} == {"SUCCEEDED"}
    assert [row[2:4] for row in rows[:2]] == [
        ["2040-01-01", "03:00:00"],
        ["2040-01-02", "03:00:00"],
    ]
    assert runs[5].startswith("history (") and "schedules/1000/schedule.log" in runs[5]
    assert any("run of 2040-01-03T03:00:00Z queued: " in line for line in runs[6:])
    assert cli("schedule", "pause", "1000", *TARGET) == f"paused: {PARENT}/schedules/1000\n"
    cli("clock", "advance", "2d")
    cli("schedule", "resume", "nightly", "--catch-up", *TARGET)
    cli("clock", "advance", "0s", "--wait")
    after = cli("schedule", "runs", f"{PARENT}/schedules/1000", *TARGET)
    assert "ACTIVE, 5 run(s)" in after, "nights 4 and 5 were backfilled"
    assert "RESUMED (catch_up=True): 2 missed run(s) queued for backfill" in after
    assert cli("schedule", "delete", "nightly", *TARGET) == f"deleted: {PARENT}/schedules/1000\n"


def test_an_unknown_or_ambiguous_schedule_is_refused(emu: Path) -> None:
    result = CliRunner().invoke(app, ["schedule", "show", "nope", *TARGET])
    assert result.exit_code == 2
    assert "SCHEDULE: 'nope' names 0 schedules in" in result.stderr


def test_the_gate_column_says_promoted_kept_with_both_metrics_or_failed() -> None:
    from types import SimpleNamespace

    from google.cloud import aiplatform_v1

    from trainpool.cli.schedule import gate_column
    from trainpool.vertex.schedules import ScheduledJob

    model = "projects/p/locations/l/models/1000"
    state = aiplatform_v1.PipelineState

    def run(verdict: dict, job_state: object = state.PIPELINE_STATE_SUCCEEDED, error: str = ""):
        job = SimpleNamespace(state=job_state, error=SimpleNamespace(message=error))
        return ScheduledJob(job, "gs://b/m/", verdict.get("model", ""), verdict)

    common = {"metric": "accuracy", "goal": "maximize", "alias": "blessed"}
    promoted = {
        **common,
        "decision": "promoted",
        "model": f"{model}@3",
        "challenger": 0.93,
        "blessed": 0.9,
        "improvement": 0.03,
        "blessedVersion": f"{model}@2",
    }
    assert gate_column(run(promoted)) == (
        "promoted 1000@3 (accuracy 0.93, blessed 1000@2 had 0.9: better by 0.03)"
    )
    kept = {**promoted, "decision": "kept", "challenger": 0.9, "improvement": 0.0}
    assert gate_column(run({**kept, "model": f"{model}@4"})) == (
        "kept blessed 1000@2 (accuracy 0.9 vs 0.9: equal; 1000@4 unpromoted)"
    )
    skipped = {**kept, "decision": "not-uploaded", "model": "", "challenger": 0.8}
    skipped["improvement"] = -0.1
    assert gate_column(run(skipped)) == (
        "kept blessed 1000@2 (accuracy 0.8 vs 0.9: worse by 0.1; not uploaded)"
    )
    failed = run({}, state.PIPELINE_STATE_FAILED, "task retraining-gate failed:\n  boom")
    assert gate_column(failed) == "failed (task retraining-gate failed: boom)"
    assert gate_column(run({})) == "-", "no gate ran (no serving_image)"
