"""``trainpool tensorboard NAME --export-only``: an Experiment's time series, as
``log_time_series_metrics`` wrote them to its backing Vertex TensorBoard, become event files
that TensorBoard's own reader gives back point for point."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.cloud import aiplatform
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from typer.testing import CliRunner

from trainpool.cli import app
from trainpool.testing import emulated_vertex

pytestmark = pytest.mark.timeout(120)


def test_an_experiments_time_series_open_in_tensorboard(tmp_path: Path) -> None:
    with emulated_vertex(tmp_path / "root", project="demo"):
        board = aiplatform.Tensorboard.create(
            display_name="board", project="demo", location="us-central1"
        )
        aiplatform.init(
            project="demo",
            location="us-central1",
            experiment="curves-demo",
            experiment_tensorboard=board,
            api_transport="grpc",
        )
        for run, scale in (("run-one", 1.0), ("run-two", 2.0)):
            aiplatform.start_run(run)
            for step in range(3):
                aiplatform.log_time_series_metrics({"loss": scale / (step + 1)}, step=step + 1)
            aiplatform.end_run()
        logdir = tmp_path / "logs"
        done = CliRunner().invoke(
            app,
            [
                "tensorboard",
                "curves-demo",
                "--project",
                "demo",
                "--logdir",
                str(logdir),
                "--export-only",
            ],
        )
    assert done.exit_code == 0, done.output
    assert "run-one: 3 points" in done.output and "run-two: 3 points" in done.output
    for run, scale in (("run-one", 1.0), ("run-two", 2.0)):
        events = EventAccumulator(str(logdir / run)).Reload()
        assert [(e.step, round(e.value, 4)) for e in events.Scalars("loss")] == [
            (1, round(scale / 1, 4)),
            (2, round(scale / 2, 4)),
            (3, round(scale / 3, 4)),
        ]


def test_a_name_with_no_experiment_is_refused_naming_it(tmp_path: Path) -> None:
    with emulated_vertex(tmp_path / "root", project="demo"):
        done = CliRunner().invoke(app, ["tensorboard", "nothing", "--project", "demo"])
    assert done.exit_code == 2
    assert "'nothing': no TensorBoard experiment of that id" in done.output
