"""runtime.hypertune: byte-compatible with cloudml-hypertune, and a reader for both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainpool.runtime.hypertune import MetricRecord, Reporter, latest, read_metrics

WRITE_WITH_CLOUDML = """
import sys, hypertune
h = hypertune.HyperTune()
h.report_hyperparameter_tuning_metric("loss", 0.5, global_step=1, checkpoint_path="gs://bkt/c1")
h.report_hyperparameter_tuning_metric("accuracy", "0.75", global_step=2)
h.report_hyperparameter_tuning_metric(None, 3)
"""


def _cloudml(path: Path, trial: str) -> None:
    env = os.environ | {"CLOUD_ML_HP_METRIC_FILE": str(path), "CLOUD_ML_TRIAL_ID": trial}
    subprocess.run([sys.executable, "-c", WRITE_WITH_CLOUDML], env=env, check=True)


def test_reader_parses_the_real_library_file(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "cloudml.metrics"
    started = time.time()
    _cloudml(path, "3")
    records = read_metrics(str(path))
    assert [(r.trial, r.global_step, r.checkpoint_path, r.values) for r in records] == [
        ("3", 1, "gs://bkt/c1", {"loss": 0.5}),
        ("3", 2, "", {"accuracy": 0.75}),
        ("3", 0, "", {"training/hptuning/metric": 3.0}),
    ]
    assert all(started - 1 <= r.timestamp <= time.time() for r in records)
    assert latest(records, "loss") == 0.5 and latest(records, "auc") is None


def test_our_lines_are_byte_identical_to_the_real_library(tmp_path: Path) -> None:
    theirs, ours = tmp_path / "theirs.metrics", tmp_path / "ours" / "m.metrics"
    _cloudml(theirs, "3")
    reporter = Reporter({"CLOUD_ML_HP_METRIC_FILE": str(ours), "CLOUD_ML_TRIAL_ID": "3"})
    reporter.report("loss", 0.5, global_step=1, checkpoint_path="gs://bkt/c1")
    reporter.report("accuracy", "0.75", global_step=2)  # type: ignore[arg-type]
    reporter.report("", 3)
    timestamps = [r.timestamp for r in read_metrics(str(theirs))]
    lines = ours.read_text().splitlines()
    rewritten = [
        json.dumps(json.loads(line) | {"timestamp": stamp}, sort_keys=True)
        for line, stamp in zip(lines, timestamps, strict=True)
    ]
    assert "\n".join(rewritten) + "\n" == theirs.read_text()
    assert [r.values for r in read_metrics(str(ours))] == [
        r.values for r in read_metrics(str(theirs))
    ]


def test_keeps_the_last_hundred_and_defaults_trial_to_zero(tmp_path: Path) -> None:
    path = tmp_path / "m.metrics"
    reporter = Reporter({"CLOUD_ML_HP_METRIC_FILE": str(path)})
    for step in range(1, 131):
        reporter.report("loss", 1.0 / step, global_step=step)
    records = read_metrics(str(path))
    assert [r.global_step for r in records] == list(range(31, 131))
    assert {r.trial for r in records} == {"0"}
    assert latest(records, "loss") == 1.0 / 130


def test_report_metric_uses_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainpool.runtime.hypertune import report_metric

    path = tmp_path / "trial7.metrics"
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(path))
    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "7")
    report_metric("loss", 2.5, 4)
    report_metric("loss", 1.5, 5)
    assert [(r.trial, r.global_step, r.values) for r in read_metrics(str(path))] == [
        ("7", 4, {"loss": 2.5}),
        ("7", 5, {"loss": 1.5}),
    ]


def test_reader_skips_an_unfinished_last_line_and_names_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "m.metrics"
    good = '{"global_step": "1", "loss": "0.5", "timestamp": 1.0, "trial": "1"}\n'
    path.write_text(good + '{"loss": "0.')
    assert read_metrics(str(path)) == [MetricRecord(1.0, "1", 1, "", {"loss": 0.5})]
    path.write_text("not json\n" + good)
    with pytest.raises(ValueError, match=f"{path}:1: not a JSON line"):
        read_metrics(str(path))
    path.write_text('{"loss": "high"}\n')
    with pytest.raises(ValueError, match=f"{path}:1: a value is not a number"):
        read_metrics(str(path))
    assert read_metrics(str(tmp_path / "missing")) == []
