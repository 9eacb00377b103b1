"""trainpool.emulated and `trainpool run --local`: YAML from disk, kfp.local, the emulator."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures.pipelines import compile_fixture
from typer.testing import CliRunner

from trainpool import redirect
from trainpool.cli import app
from trainpool.config import EMULATOR_ENV
from trainpool.emulated.pipeline_run import run_local
from trainpool.spec.pipeline_params import (
    ParamError,
    coerce_values,
    load_pipeline_spec,
    parse_params,
    pipeline_defaults,
    pipeline_inputs,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_fixture("tiny", tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def no_emulator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EMULATOR_ENV, raising=False)


def test_inputs_and_defaults_are_typed(tiny: Path) -> None:
    spec = load_pipeline_spec(tiny)
    assert pipeline_inputs(spec) == {
        "a": "NUMBER_INTEGER",
        "b": "NUMBER_INTEGER",
        "config": "STRUCT",
        "fail": "BOOLEAN",
        "label": "STRING",
        "pause": "NUMBER_DOUBLE",
        "ratio": "NUMBER_DOUBLE",
        "tags": "LIST",
        "verbose": "BOOLEAN",
    }
    defaults = pipeline_defaults(spec)
    assert defaults == {
        "a": 1,
        "b": 2,
        "config": {"workers": 2.0},
        "fail": False,
        "label": "run",
        "pause": 0.0,
        "ratio": 0.5,
        "tags": ["x"],
        "verbose": False,
    }
    assert type(defaults["a"]) is int


def test_params_are_typed_by_the_pipeline(tiny: Path) -> None:
    inputs = pipeline_inputs(load_pipeline_spec(tiny))
    pairs = ["a=3", "b=4.0", "label=7", "ratio=2", "verbose=True", 'tags=[1, "y"]']
    pairs.append('config={"workers": 3}')
    values = parse_params(pairs, inputs)
    assert values == {
        "a": 3,
        "b": 4,
        "label": "7",
        "ratio": 2.0,
        "verbose": True,
        "tags": [1, "y"],
        "config": {"workers": 3},
    }
    assert [type(values[k]) for k in ("a", "b", "label", "ratio")] == [int, int, str, float]


def test_bad_params_are_all_named(tiny: Path) -> None:
    inputs = pipeline_inputs(load_pipeline_spec(tiny))
    with pytest.raises(ParamError) as caught:
        parse_params(["a=1.5", "lable=x", "tags={}", "noequals", "b=1", "b=2"], inputs)
    assert [str(p) for p in caught.value.problems] == [
        "--param a=1.5: a is NUMBER_INTEGER; accepted: a whole number such as 3",
        "--param lable: the pipeline has no such parameter (did you mean 'label'?); "
        "accepted: a, b, config, fail, label, pause, ratio, tags, verbose",
        '--param tags={}: tags is LIST; accepted: a JSON list such as ["a", 1]',
        "--param 'noequals': expected NAME=VALUE, e.g. --param worker_count=2",
        "--param b: given twice; accepted: each parameter once",
    ]


def test_values_from_a_protobuf_value_get_their_ints_back(tiny: Path) -> None:
    inputs = pipeline_inputs(load_pipeline_spec(tiny))
    assert coerce_values({"a": 3.0, "ratio": 1, "label": "x"}, inputs) == {
        "a": 3,
        "ratio": 1.0,
        "label": "x",
    }
    with pytest.raises(ParamError, match=r"--param a=3.5: a is NUMBER_INTEGER"):
        coerce_values({"a": 3.5}, inputs)


def test_not_a_pipeline_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("name: x\n")
    with pytest.raises(ValueError, match="not a compiled KFP pipeline"):
        load_pipeline_spec(path)


def test_run_succeeds_with_its_own_emulator(tiny: Path, tmp_path: Path, no_emulator: None) -> None:
    result = run_local(tiny, {"a": 5, "tags": ["t"]}, tmp_path)
    assert result.state == "SUCCEEDED", result.error
    assert json.loads(result.outputs["Output"]) == {
        "config": {"workers": 2.0},
        "label": "run",
        "ratio": 0.5,
        "tags": ["t"],
        "total": 7,
        "verbose": False,
    }
    assert [(t.name, t.state) for t in result.tasks] == [
        ("add", "SUCCEEDED"),
        ("fail-when", "SUCCEEDED"),
        ("describe", "SUCCEEDED"),
    ]
    assert EMULATOR_ENV not in os.environ
    runs = tmp_path / "gcs" / "local-pipeline-root" / "runs"  # gs://local-pipeline-root/runs
    # <pipeline root>/<project number>/<job id>/<task name>_<task id>/ (kfp_local/tasks.py)
    assert result.run_dir is not None and result.run_dir.parent == runs / "0"
    [add] = [t for t in result.tasks if t.name == "add"]
    assert (result.run_dir / f"add_{add.task_id}" / "executor_output.json").is_file()
    assert "Executing task" in result.transcript.read_text()
    assert (tmp_path / "emulator.sqlite").is_file()


def test_a_failed_task_fails_the_run(tiny: Path, tmp_path: Path, no_emulator: None) -> None:
    result = run_local(tiny, {"fail": True}, tmp_path)
    assert result.state == "FAILED"
    assert result.error == (
        "Pipeline 'tiny' finished with status FAILURE. Inner task failed: 'fail-when'."
    )
    states = [(t.name, t.state) for t in result.tasks]
    assert states == [("add", "SUCCEEDED"), ("fail-when", "FAILED")]
    assert result.tasks[1].tail[-1] == "RuntimeError: asked to fail"
    assert result.outputs == {}


def test_jobs_and_replica_logs_are_polled_from_the_emulator(
    tmp_path: Path, no_emulator: None
) -> None:
    pipeline = compile_fixture("with_job", tmp_path)
    result = run_local(pipeline, {"message": "hello from the replica"}, tmp_path / "root")
    assert result.state == "SUCCEEDED", result.error
    name = "projects/demo-project/locations/us-central1/customJobs/1000"
    assert result.outputs == {"Output": name}
    assert [(j.name, j.display_name, j.kind, j.state, j.replicas) for j in result.jobs] == [
        (
            name,
            "fixture-train",
            "CustomJob",
            "SUCCEEDED",
            {"workerpool0-0": "hello from the replica"},
        )
    ]


def test_cli_run_prints_outputs(tiny: Path, tmp_path: Path, no_emulator: None) -> None:
    result = CliRunner().invoke(
        app, ["run", str(tiny), "--local", "--root", str(tmp_path), "--param", "b=10"]
    )
    assert result.exit_code == 0, result.output
    assert "pipeline tiny SUCCEEDED" in result.output
    outputs = json.loads(result.output.split("outputs: ", 1)[1])
    assert json.loads(outputs["Output"])["total"] == 11
    assert "│ describe  │ SUCCEEDED │" in result.output


def test_cli_run_exits_1_on_failure(tiny: Path, tmp_path: Path, no_emulator: None) -> None:
    result = CliRunner().invoke(
        app, ["run", str(tiny), "--local", "--root", str(tmp_path), "--param", "fail=true"]
    )
    assert result.exit_code == 1
    assert "pipeline tiny FAILED" in result.stderr
    assert "RuntimeError: asked to fail" in result.stderr


def test_cli_run_refuses_bad_input_before_running(tiny: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    no_local = runner.invoke(app, ["run", str(tiny), "--root", str(tmp_path)])
    assert no_local.exit_code == 2
    assert "--local: not given" in no_local.stderr
    args = ["run", str(tiny), "--local", "--root", str(tmp_path), "--param", "a=x"]
    bad = runner.invoke(app, args)
    assert bad.exit_code == 2
    assert bad.stderr == "--param a=x: a is NUMBER_INTEGER; accepted: a whole number such as 3\n"
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def where(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_fixture("where", tmp_path_factory.mktemp("where"))


def test_a_task_runs_outside_the_checkout_with_the_runs_project_and_no_shell_env(
    where: Path, tmp_path: Path, no_emulator: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINPOOL_TEST_SENTINEL", "from-my-shell")
    monkeypatch.setenv("PYTHONPATH", "/somewhere/of/mine")
    result = run_local(
        where, {"path": str(where)}, tmp_path, project="demo-project", location="europe-west4"
    )
    assert result.ok, result.error
    seen = json.loads(result.outputs["Output"])
    assert seen["project"] == "demo-project" and seen["location"] == "europe-west4"
    assert Path(seen["cwd"]).is_relative_to(tmp_path / "local-runs"), seen["cwd"]
    assert not Path(seen["cwd"]).is_relative_to(Path(__file__).resolve().parents[1])
    # the shell's PYTHONPATH stays out; the task's is only the folder that points Google's
    # clients at the emulator (trainpool.redirect), as GCPC's launchers need
    assert seen["env"] == {"TRAINPOOL_TEST_SENTINEL": None, "PYTHONPATH": str(redirect.SITE)}
    assert os.environ["TRAINPOOL_TEST_SENTINEL"] == "from-my-shell", "the caller's env is back"


def test_a_task_that_reads_a_checkout_path_fails_naming_it(
    where: Path, tmp_path: Path, no_emulator: None
) -> None:
    relative = "tests/fixtures/pipelines/where.py"
    assert Path(relative).is_file(), "the path exists in the checkout the test runs from"
    result = run_local(where, {"path": relative}, tmp_path)
    assert result.state == "FAILED"
    [task] = [t for t in result.tasks if t.state == "FAILED"]
    assert any(relative in line and "No such file" in line for line in task.tail), task.tail


def test_kfp_local_warnings_and_log_records_go_to_the_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import logging
    import sys
    import warnings

    from trainpool.kfp_local.execute import to_transcript
    from trainpool.kfp_local.tasklog import TaskLog

    with open(tmp_path / "t.log", "w", encoding="utf-8") as handle:
        with to_transcript(TaskLog(handle)):
            warnings.warn("a task that uses custom or non-Python base image", stacklevel=1)
            logging.getLogger("kfp.local").warning("Could not resolve parent input: x")
            print("Executing task 'a'")
            print("stray", file=sys.stderr)
    seen = capsys.readouterr()
    assert seen.out == seen.err == ""
    text = (tmp_path / "t.log").read_text()
    for expected in ("non-Python base", "Could not resolve parent input", "Executing", "stray"):
        assert expected in text


def test_a_run_uses_the_emulator_already_serving_its_root(
    tmp_path: Path, no_emulator: None
) -> None:
    from trainpool import emulator

    pipeline = compile_fixture("with_job", tmp_path)
    with emulator.start(tmp_path / "root") as running:
        result = run_local(pipeline, {}, tmp_path / "root")
        assert result.state == "SUCCEEDED", result.error
        assert [j.state for j in result.jobs] == ["SUCCEEDED"]
        count = "SELECT COUNT(*) AS n FROM resources WHERE kind = 'customJobs'"
        assert running.state.db.execute(count)[0]["n"] == 1
