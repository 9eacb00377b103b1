"""A real 4-trial sweep on the emulator, its report from ``trainpool jobs report``, in Chromium.

Chromium is Debian's package (scripts/setup installs it); playwright only drives it.
The page is opened from a file with every network request recorded: the report must
need none. A screenshot is kept in the test's tmp dir (its path is printed).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_image import HOST_IMAGE, host_image
from fixtures.jobs import wait_job
from fixtures.vertex import PARENT
from playwright.sync_api import Page, sync_playwright
from typer.testing import CliRunner

import trainpool.emulator as emulator
from trainpool.cli import app
from trainpool.vertex.clients import job_client

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
TRAINER = """
import argparse, sys
from trainpool.runtime.hypertune import report_metric
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float)
parser.add_argument("--act")
args = parser.parse_args()
if args.lr == 0.1 and args.act == "tanh":
    print("loss diverged to NaN at lr=0.1 with tanh", file=sys.stderr)
    raise SystemExit(3)
for step in (1, 2, 3):
    report_metric("loss", 1.0 / step + args.lr * 10 + (0.05 if args.act == "tanh" else 0), step)
"""


def sweep_job(trainer: Path) -> dict[str, Any]:
    """A 2 x 2 grid over lr (log scale) and act; (0.1, tanh) fails, the job still succeeds."""
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": HOST_IMAGE, "command": [sys.executable, str(trainer)]},
    }
    lr = {"values": [0.001, 0.1]}
    return {
        "display_name": "report-sweep",
        "max_trial_count": 4,
        "parallel_trial_count": 2,
        "max_failed_trial_count": 2,
        "study_spec": {
            "metrics": [{"metric_id": "loss", "goal": "MINIMIZE"}],
            "parameters": [
                {"parameter_id": "lr", "discrete_value_spec": lr, "scale_type": "UNIT_LOG_SCALE"},
                {"parameter_id": "act", "categorical_value_spec": {"values": ["relu", "tanh"]}},
            ],
            "algorithm": "GRID_SEARCH",
        },
        "trial_job_spec": {"worker_pool_specs": [pool]},
    }


@pytest.fixture
def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The HTML that ``trainpool jobs report`` wrote for a finished real sweep."""
    (tmp_path / "trainer.py").write_text(TRAINER)
    with emulator.start(tmp_path / "root") as emu:
        host_image(emu.root)
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        created = client.create_hyperparameter_tuning_job(
            parent=PARENT, hyperparameter_tuning_job=sweep_job(tmp_path / "trainer.py")
        )
        done = wait_job(client.get_hyperparameter_tuning_job, created.name, 120, poll_s=0.1)
        assert done.state.name == "JOB_STATE_SUCCEEDED", done.error
        out = tmp_path / "report.html"
        args = ["report", created.name, "--root", str(tmp_path / "root"), "--out", str(out)]
        result = CliRunner().invoke(app, ["jobs", *args])
        assert result.exit_code == 0, result.output
        assert result.output.strip() == str(out.resolve())
        yield out


@pytest.fixture
def page() -> Iterator[Page]:
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser.new_page(viewport={"width": 1200, "height": 900})
        browser.close()


def test_the_report_of_a_real_sweep_renders_offline_and_sorts(
    report: Path, page: Page, tmp_path: Path
) -> None:
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(report.as_uri())
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(tmp_path / "trials-report.png"), full_page=True)
    print(f"screenshot: {tmp_path / 'trials-report.png'}")

    assert errors == []
    assert requests == [report.as_uri()]
    rows = page.locator("#trials tbody tr")
    assert rows.count() == 4
    cells = [rows.nth(i).locator("td").all_inner_texts() for i in range(4)]
    assert [c[0] for c in cells] == ["1", "2", "3", "4"]
    assert {(c[2], c[3]) for c in cells} == {
        ("0.001", "relu"),
        ("0.001", "tanh"),
        ("0.1", "relu"),
        ("0.1", "tanh"),
    }
    (failed,) = [c for c in cells if c[1] == "INFEASIBLE"]
    assert (failed[2], failed[3], failed[4]) == ("0.1", "tanh", "")
    assert "loss diverged to NaN at lr=0.1 with tanh" in failed[-1]
    assert "non-zero status of 3" in failed[-1]
    assert [c[5] for c in cells if c is not failed] == ["3", "3", "3"]  # steps per trial

    charts = page.locator("svg")
    assert charts.count() == 4  # parameters, history, per-step curves, parallel coordinates
    text = " ".join(charts.all_text_contents())
    for label in ("lr (log scale)", "act", "relu", "tanh", "trial", "best so far (minimize)"):
        assert label in text
    assert "trial 1 (best)" in text  # lr 0.001, relu has the lowest loss
    summary = page.locator("body > p").first.inner_text()
    assert "4 trials (1 infeasible, 3 succeeded)" in summary
    assert "best: trial 1, loss = 0.343333 with lr=0.001, act=relu" in summary

    heading = page.locator("#trials th", has_text="loss (final)")
    heading.click()
    ids = page.locator("#trials tbody tr td:first-child").all_inner_texts()
    assert ids == ["1", "2", "3", "4"]  # lowest loss first, the failed trial last
    heading.click()
    ids = page.locator("#trials tbody tr td:first-child").all_inner_texts()
    assert ids == ["3", "2", "1", "4"]  # highest loss first, the failed trial still last
    assert errors == []
