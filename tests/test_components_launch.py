"""launch_custom_job from component_specs/ under kfp.local, against the emulator over gRPC."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.vertex import PARENT
from kfp import components, dsl, local

import trainpool.emulator as emulator
from trainpool.vertex.clients import job_client
from trainpool.vertex.labels import TASK_LABEL, task_label_value

pytestmark = pytest.mark.timeout(180)

SPEC = Path(__file__).parent.parent / "component_specs" / "launch_custom_job.yaml"
TRAINER = """
import json, os, sys, time
spec = json.loads(os.environ["CLUSTER_SPEC"])
role = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
print("ROLE " + json.dumps({"cluster_spec": spec["task"], "tf_config": role}, sort_keys=True),
      flush=True)
here = os.path.dirname(os.path.abspath(__file__))
open(os.path.join(here, "reported-" + spec["task"]["type"]), "w").close()
# The primary's end ends the job and stops parameter servers, as on Vertex: it waits until
# every other pool has reported, so the test reads each role whatever the start order.
others = [os.path.join(here, "reported-" + p) for p in spec["cluster"] if p != "workerpool0"]
deadline = time.time() + 30
while spec["task"]["type"] == "workerpool0" and time.time() < deadline:
    if all(os.path.exists(path) for path in others):
        break
    time.sleep(0.05)
sys.exit(int(os.environ.get("EXIT_CODE") or 0))
"""


def pool(trainer: Path, exit_code: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {"command": ["python3", str(trainer)]}
    if exit_code:
        container["env"] = [{"name": "EXIT_CODE", "value": str(exit_code)}]
    return {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": 1,
        "containerSpec": container,
    }


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Any]]:
    trainer = tmp_path / "trainer.py"
    trainer.write_text(TRAINER)
    with emulator.start(tmp_path / "root") as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        local.init(local.SubprocessRunner(use_venv=False), pipeline_root=str(tmp_path / "kfp"))
        yield trainer, emu


def launch(spec: dict[str, Any], **extra: Any) -> Any:
    component = components.load_component_from_file(str(SPEC))
    return component(
        project="demo",
        location="us-central1",
        display_name="roles",
        custom_job_spec=spec,
        image_uri="local/roles:1",
        **extra,
    )


def roles(root: Path, job_name: str, replica: str) -> dict[str, Any]:
    log = (root / "jobs" / job_name.rsplit("/", 1)[-1] / f"{replica}.log").read_text()
    line = next(x for x in log.splitlines() if x.startswith("ROLE "))
    return dict(json.loads(line[len("ROLE ") :]))


def test_primary_and_evaluators_reach_the_server_in_place_and_evaluator_sees_its_role(
    setup: tuple[Path, Any],
) -> None:
    trainer, emu = setup
    kms = "projects/demo/locations/us-central1/keyRings/r/cryptoKeys/k"
    task = launch(
        {"workerPoolSpecs": [pool(trainer), {}, {}, pool(trainer)]},
        labels={"team": "ml"},
        job_fields={
            "labels": {"team": "plan", "cost-center": "42"},
            "encryptionSpec": {"kmsKeyName": kms},
        },
    )
    name = task.outputs["job_name"]
    assert task.outputs["state"] == "JOB_STATE_SUCCEEDED"
    job = job_client("us-central1").get_custom_job(name=name)
    pools = [(p.replica_count, p.container_spec.image_uri) for p in job.job_spec.worker_pool_specs]
    assert pools == [(1, "local/roles:1"), (0, ""), (0, ""), (1, "local/roles:1")]
    assert job.labels["team"] == "ml"
    assert job.labels["cost-center"] == "42"
    assert job.encryption_spec.kms_key_name == kms
    assert roles(emu.root, name, "workerpool3-0") == {
        "cluster_spec": {"index": 0, "type": "workerpool3"},
        "tf_config": {"index": 0, "type": "evaluator"},
    }
    resources = json.loads(task.outputs["gcp_resources"])
    assert resources["resources"][0]["resourceUri"].endswith("/v1/" + name)
    summary = Path(task.outputs["summary"].path).read_text()
    assert "| 1 | workers | 0 | (skipped) | |" in summary
    assert "| 3 | evaluators | 1 | n1-standard-4 | `local/roles:1` |" in summary


def test_primary_and_parameter_servers_keep_the_empty_worker_pool(
    setup: tuple[Path, Any],
) -> None:
    trainer, emu = setup
    task = launch({"workerPoolSpecs": [pool(trainer), {}, pool(trainer)]})
    name = task.outputs["job_name"]
    job = job_client("us-central1").get_custom_job(name=name)
    assert [p.replica_count for p in job.job_spec.worker_pool_specs] == [1, 0, 1]
    assert roles(emu.root, name, "workerpool2-0")["tf_config"] == {"index": 0, "type": "ps"}


def test_each_run_labels_its_job_with_its_own_resolved_task_id(setup: tuple[Path, Any]) -> None:
    trainer, _ = setup
    names = [launch({"workerPoolSpecs": [pool(trainer)]}).outputs["job_name"] for _ in range(2)]
    client = job_client("us-central1")
    labels = [client.get_custom_job(name=name).labels[TASK_LABEL] for name in names]
    unresolved = task_label_value(dsl.PIPELINE_TASK_ID_PLACEHOLDER)
    # kfp.local resolves the task id placeholder to a random integer (Vertex: the task's id)
    assert unresolved not in labels
    assert all(re.fullmatch(r"\d{1,8}", label) for label in labels), labels
    assert labels[0] != labels[1]  # else the second run would re-attach to the first one's job


def test_a_failed_job_fails_the_task_with_the_jobs_error(setup: tuple[Path, Any]) -> None:
    trainer, _ = setup
    with pytest.raises(RuntimeError):
        launch({"workerPoolSpecs": [pool(trainer, exit_code=3)]})
    (failed,) = job_client("us-central1").list_custom_jobs(parent=PARENT)
    assert failed.state.name == "JOB_STATE_FAILED"
    assert "workerpool0-0 exited with a non-zero status of 3" in failed.error.message


def test_bad_input_is_refused_before_anything_is_created(
    setup: tuple[Path, Any], capfd: pytest.CaptureFixture[str]
) -> None:
    trainer, _ = setup
    with pytest.raises(RuntimeError):
        launch({"workerPoolSpecs": [pool(trainer)]}, strategy="CHEAP")
    output = capfd.readouterr()
    message = "strategy: 'CHEAP'; accepted: STANDARD, ON_DEMAND, LOW_COST, SPOT, FLEX_START"
    assert message in output.out + output.err
    assert list(job_client("us-central1").list_custom_jobs(parent=PARENT)) == []
