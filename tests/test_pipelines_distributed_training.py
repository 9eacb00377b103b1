"""The distributed-training pipeline: its compiled YAML, loaded from disk, run end to end."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from trainpool import compiling, emulator
from trainpool.config import EMULATOR_ENV
from trainpool.localrun.runner import run_local
from trainpool.vertex.clients import job_client

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = ROOT / "pipelines" / "distributed_training.yaml"
EXAMPLE = str(ROOT / "examples" / "pytorch_ddp")
SMALL_REQUEST = {
    "primary": {"machine_type": "n1-standard-4"},
    "workers": {"replica_count": 2, "machine_type": "n1-standard-4"},
    "args": ["--epochs=1"],
    "base_output_directory": "gs://trainpool-test/out",
}

pytestmark = pytest.mark.timeout(240)


def _without_version_noise(text: str) -> str:
    text = re.sub(r"sdkVersion: kfp-[\w.]+", "sdkVersion: kfp", text)
    return re.sub(r"kfp==[\w.]+", "kfp", text)


def test_checked_in_yaml_matches_a_fresh_compile_apart_from_versions(tmp_path: Path) -> None:
    compiling.compile_to(ROOT, tmp_path)
    fresh = (tmp_path / "pipelines" / "distributed_training.yaml").read_text()
    assert _without_version_noise(fresh) == _without_version_noise(PIPELINE.read_text())


def test_compile_is_byte_identical_whatever_the_callers_hash_seed(tmp_path: Path) -> None:
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / seed
        code = "import sys; from pathlib import Path; from trainpool.compiling import compile_to;"
        code += " compile_to(Path(sys.argv[1]), Path(sys.argv[2]))"
        env = dict(os.environ, PYTHONHASHSEED=seed)
        subprocess.run([sys.executable, "-c", code, str(ROOT), str(out)], env=env, check=True)
        outputs.append((out / "pipelines" / "distributed_training.yaml").read_bytes())
    assert outputs[0] == outputs[1]


def test_knobs_are_typed_parameters_and_training_tasks_never_cache() -> None:
    spec = yaml.safe_load(PIPELINE.read_text())
    inputs = spec["root"]["inputDefinitions"]["parameters"]
    assert inputs["worker_count"]["parameterType"] == "NUMBER_INTEGER"
    assert inputs["accelerator_count"]["parameterType"] == "NUMBER_INTEGER"
    assert inputs["max_trial_count"]["parameterType"] == "NUMBER_INTEGER"
    assert inputs["cluster_request"]["parameterType"] == "STRUCT"
    caching = {}

    def walk(dag: dict) -> None:
        for name, task in dag.get("tasks", {}).items():
            caching[name] = task.get("cachingOptions", {}).get("enableCache", False)
        for component in spec["components"].values():
            if "dag" in component and component["dag"] is not dag:
                for name, task in component["dag"].get("tasks", {}).items():
                    caching[name] = task.get("cachingOptions", {}).get("enableCache", False)

    walk(spec["root"]["dag"])
    assert caching["hyperparameter-sweep"] is False
    assert caching["launch-custom-job"] is False
    assert caching["plan-cluster"] is True


@pytest.fixture
def own_emulator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EMULATOR_ENV, raising=False)


def test_single_job_run_applies_the_flat_knobs(tmp_path: Path, own_emulator: None) -> None:
    result = run_local(
        PIPELINE,
        {
            "cluster_request": dict(SMALL_REQUEST, labels={"team": "ranking"}),
            "worker_count": 1,
            "max_trial_count": 0,
            "source_dir": EXAMPLE,
        },
        tmp_path,
    )
    assert result.state == "SUCCEEDED", result.error
    [job] = result.jobs
    assert (job.kind, job.state) == ("CustomJob", "SUCCEEDED")
    assert sorted(job.replicas) == ["workerpool0-0", "workerpool1-0"]
    resources = json.loads(result.outputs["gcp_resources"])["resources"]
    assert resources[0]["resourceType"] == "CustomJob"
    assert resources[0]["resourceUri"].endswith(job.name)
    model = tmp_path / "gcs" / "trainpool-test" / "out" / "model"
    assert any(model.iterdir()), "the chief wrote no model"
    with emulator.start(tmp_path) as emu, pytest.MonkeyPatch.context() as env:
        env.setenv(EMULATOR_ENV, emu.address)
        stored = job_client("us-central1").get_custom_job(name=job.name)
    assert stored.labels["team"] == "ranking", "the request's labels reach the job"
    assert [p.replica_count for p in stored.job_spec.worker_pool_specs] == [1, 1]


def test_sweep_run_finds_the_expected_best_trial(tmp_path: Path, own_emulator: None) -> None:
    study = {
        "metrics": {"loss": "minimize"},
        "parameters": {"lr": {"type": "discrete", "values": [0.001, 0.1]}},
        "algorithm": "grid",
    }
    result = run_local(
        PIPELINE,
        {
            "cluster_request": SMALL_REQUEST,
            "worker_count": 1,
            "study": study,
            "max_trial_count": 2,
            "parallel_trial_count": 2,
            "source_dir": EXAMPLE,
        },
        tmp_path,
    )
    assert result.state == "SUCCEEDED", result.error
    [job] = result.jobs
    assert job.kind == "HyperparameterTuningJob"
    trials = {float(trial.parameters["lr"]): trial for trial in job.trials}
    assert sorted(trials) == [0.001, 0.1]
    assert all(trial.state == "SUCCEEDED" for trial in trials.values())
    best, worst = trials[0.1].metric, trials[0.001].metric
    assert best is not None and worst is not None and best < worst
    for trial_id in ("1", "2"):
        assert any((tmp_path / "gcs" / "trainpool-test" / "out" / trial_id / "model").iterdir())


def test_a_bad_request_fails_the_run_before_any_job(tmp_path: Path, own_emulator: None) -> None:
    bad = dict(SMALL_REQUEST, workers={"replica_count": 2, "machine_type": "n1-standrad-4"})
    result = run_local(PIPELINE, {"cluster_request": bad, "source_dir": EXAMPLE}, tmp_path)
    assert result.state == "FAILED"
    assert "n1-standrad-4" in result.error or "plan-cluster" in result.error
    assert result.jobs == []
