"""Google's own launcher next to ours: what it does to pool roles, and where our plan plugs in.

GCPC's CustomTrainingJobOp launcher is run for real against the emulator; only its
JobServiceClient construction is pointed at the emulator (its endpoint is hard-coded).
"""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from google_cloud_pipeline_components.container.v1.custom_job import remote_runner
from google_cloud_pipeline_components.container.v1.gcp_launcher import job_remote_runner
from google_cloud_pipeline_components.v1.custom_job import CustomTrainingJobOp
from kfp import compiler, dsl

import trainpool.emulator as emulator
from trainpool.plan import plan_cluster
from trainpool.spec import to_snake
from trainpool.vertex import resources
from trainpool.vertex.clients import job_client

pytestmark = pytest.mark.timeout(120)

TRAINER = """
import json, os
print("ROLE " + json.dumps(json.loads(os.environ["TF_CONFIG"])["task"], sort_keys=True))
"""


def pool(trainer: Path, replicas: int = 1) -> dict[str, Any]:
    return {
        "machine_type": "n1-standard-4",
        "replica_count": replicas,
        "image_uri": "local/roles:1",
        "command": ["python3", str(trainer)],
    }


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path / "root") as running:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", running.address)
        monkeypatch.setattr(
            job_remote_runner.aiplatform.gapic,
            "JobServiceClient",
            lambda **_: job_client("us-central1"),
        )
        monkeypatch.setattr(job_remote_runner, "_POLLING_INTERVAL_IN_SECONDS", 0.2)
        yield running


def test_gcpc_launcher_drops_the_empty_pools_and_the_evaluator_runs_as_a_worker(
    emu: emulator.Emulator, tmp_path: Path
) -> None:
    trainer = tmp_path / "trainer.py"
    trainer.write_text(TRAINER)
    planned = plan_cluster({"primary": pool(trainer), "evaluators": pool(trainer)})
    pools = planned.to_dict()["customJobSpec"]["workerPoolSpecs"]
    assert [bool(p) for p in pools] == [True, False, False, True]
    payload = {"display_name": "gcpc", "job_spec": {"worker_pool_specs": to_snake(pools)}}
    out = tmp_path / "gcp_resources"
    remote_runner.create_custom_job(
        "CustomJob", "demo", "us-central1", json.dumps(payload), str(out)
    )
    name = resources.read(out, "CustomJob")
    job = job_client("us-central1").get_custom_job(name=name)
    assert [p.replica_count for p in job.job_spec.worker_pool_specs] == [1, 1]
    log = (emu.root / "jobs" / name.rsplit("/", 1)[-1] / "workerpool1-0.log").read_text()
    assert 'ROLE {"index": 0, "type": "worker"}' in log


def test_contiguous_planned_pools_plug_into_custom_training_job_op_and_compile(
    tmp_path: Path,
) -> None:
    request = {
        "primary": {"machine_type": "n1-standard-8", "image_uri": "gcr.io/p/trainer:1"},
        "workers": {"machine_type": "n1-standard-8", "replica_count": 2},
    }
    pools = to_snake(plan_cluster(request).to_dict()["customJobSpec"]["workerPoolSpecs"])
    assert [p["replica_count"] for p in pools] == [1, 2]

    @dsl.pipeline(name="gcpc-interop")
    def pipeline() -> None:
        CustomTrainingJobOp(display_name="train", worker_pool_specs=pools, project="demo")

    target = tmp_path / "pipeline.yaml"
    compiler.Compiler().compile(pipeline, str(target))
    spec = yaml.safe_load(target.read_text())
    task = spec["root"]["dag"]["tasks"]["custom-training-job"]
    sent = task["inputs"]["parameters"]["worker_pool_specs"]["runtimeValue"]["constant"]
    assert sent == pools
