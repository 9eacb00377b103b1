"""PersistentResourceService as users call it: the SDK's ``PersistentResource``
(create, list, reboot, delete) and ``CustomJob.run(persistent_resource_id=...)`` of a real job,
gcloud's ``ai persistent-resources``, a raw REST call on v1beta1, and what Vertex refuses:
resources that do not fit (0 replicas, unknown machine types, bad ids, autoscaling bounds) and
jobs that do not fit their resource (a machine it has no pool of, more replicas than the pool
holds), name none, or name one that is not RUNNING; deleting a resource cancels its jobs.

Sources are in :mod:`trainpool.emulator.persistent.rules` and
:mod:`trainpool.emulator.persistent.resources`.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from fixtures.host_image import HOST_IMAGE
from fixtures.shell import PROJECT, gcloud, needs_gcloud, ok
from google.api_core import exceptions
from google.cloud import aiplatform, aiplatform_v1
from google.cloud.aiplatform import jobs
from google.cloud.aiplatform.persistent_resource import PersistentResource
from google.cloud.aiplatform_v1.services.job_service.transports import JobServiceGrpcTransport
from google.cloud.aiplatform_v1.services.persistent_resource_service.transports import (
    PersistentResourceServiceGrpcTransport,
)
from google.cloud.aiplatform_v1.types import persistent_resource as pr

import trainpool.emulator as emulator
from trainpool.emulator.persistent import resources

pytestmark = pytest.mark.timeout(90)
LOCATION = "us-central1"
PARENT = f"projects/{PROJECT}/locations/{LOCATION}"
State = pr.PersistentResource.State
POOLS = [
    {"machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": 2},
    {
        "machine_spec": {
            "machine_type": "n1-standard-8",
            "accelerator_type": "NVIDIA_TESLA_T4",
            "accelerator_count": 1,
        },
        "replica_count": 1,
    },
]


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "PROVISION_S", 0.2)
    monkeypatch.setattr(resources, "REBOOT_S", 0.2)
    monkeypatch.setattr(jobs, "_JOB_WAIT_TIME", 0.2)


def clients(emu: emulator.Emulator) -> tuple[Any, Any]:
    channel = grpc.insecure_channel(emu.address)
    return (
        aiplatform_v1.PersistentResourceServiceClient(
            transport=PersistentResourceServiceGrpcTransport(channel=channel)
        ),
        aiplatform_v1.JobServiceClient(transport=JobServiceGrpcTransport(channel=channel)),
    )


def make(client: Any, resource_id: str, pools: list[dict[str, Any]] = POOLS) -> Any:
    operation = client.create_persistent_resource(
        parent=PARENT,
        persistent_resource_id=resource_id,
        persistent_resource={"resource_pools": pools},
    )
    return operation.result(timeout=30)


def trainer(tmp_path: Path, body: str) -> dict[str, Any]:
    path = tmp_path / "trainer.py"
    path.write_text(body)
    return {"image_uri": HOST_IMAGE, "command": [sys.executable, str(path)]}


def job_spec(container: dict[str, Any], resource_id: str, *pools: tuple[str, int]) -> Any:
    return {
        "persistent_resource_id": resource_id,
        "worker_pool_specs": [
            {"machine_spec": {"machine_type": m}, "replica_count": n, "container_spec": container}
            for m, n in pools
        ],
    }


def test_sdk_creates_runs_a_job_on_lists_reboots_and_deletes(
    tmp_path: Path, sdk_emulator: emulator.Emulator
) -> None:
    made = PersistentResource.create(
        persistent_resource_id="cluster",
        resource_pools=[pr.ResourcePool(POOLS[0])],
        project=PROJECT,
        location=LOCATION,
    )
    assert made.state == State.RUNNING
    assert made.resource_name == f"{PARENT}/persistentResources/cluster"
    assert made.start_time is not None
    assert made.gca_resource.resource_pools[0].id == "n1-standard-4"

    job = aiplatform.CustomJob(
        display_name="on-cluster",
        worker_pool_specs=[
            {
                "machine_spec": {"machine_type": "n1-standard-4"},
                "replica_count": 1,
                "container_spec": trainer(tmp_path, "print('ran on the cluster')"),
            }
        ],
        staging_bucket="gs://bucket/staging",
        project=PROJECT,
        location=LOCATION,
    )
    job.run(persistent_resource_id="cluster", sync=True)
    assert job.state.name == "JOB_STATE_SUCCEEDED"
    assert job.gca_resource.job_spec.persistent_resource_id == "cluster"

    listed = PersistentResource.list(project=PROJECT, location=LOCATION)
    assert [r.resource_name for r in listed] == [made.resource_name]
    made.reboot()
    assert PersistentResource("cluster").state == State.RUNNING
    made.delete()
    assert PersistentResource.list(project=PROJECT, location=LOCATION) == []


def test_a_resource_provisions_then_runs_and_jobs_must_fit_it(
    tmp_path: Path, sdk_emulator: emulator.Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PROVISIONING until the clock is moved past it, not for 1 s of a machine that may be busy
    monkeypatch.setattr(resources, "PROVISION_S", 3600.0)
    client, job_client = clients(sdk_emulator)
    operation = client.create_persistent_resource(
        parent=PARENT, persistent_resource_id="gpus", persistent_resource={"resource_pools": POOLS}
    )
    assert client.get_persistent_resource(name=f"{PARENT}/persistentResources/gpus").state == (
        State.PROVISIONING
    )
    container = trainer(tmp_path, "print('x')")
    with pytest.raises(exceptions.FailedPrecondition, match="is PROVISIONING"):
        job_client.create_custom_job(
            parent=PARENT,
            custom_job={
                "display_name": "early",
                "job_spec": job_spec(container, "gpus", ("n1-standard-4", 1)),
            },
        )
    with pytest.raises(exceptions.FailedPrecondition, match="RUNNING or ERROR"):
        client.reboot_persistent_resource(name=f"{PARENT}/persistentResources/gpus")
    sdk_emulator.clock.advance(timedelta(seconds=3600))
    resource = operation.result(timeout=30)
    assert resource.state == State.RUNNING

    refusals = {
        "machine": (job_spec(container, "gpus", ("e2-standard-4", 1)), "has no resource pool"),
        "replicas": (
            job_spec(container, "gpus", ("n1-standard-4", 1), ("n1-standard-4", 2)),
            r"3 replicas of n1-standard-4 \(workerPoolSpecs\[0\], workerPoolSpecs\[1\]\).*"
            "holds at most 2",
        ),
        "missing": (job_spec(container, "nowhere", ("n1-standard-4", 1)), "no PersistentResource"),
        "bad id": (job_spec(container, "Bad_Id", ("n1-standard-4", 1)), "is not a Persist"),
    }
    for what, (spec, message) in refusals.items():
        with pytest.raises(exceptions.InvalidArgument, match=message):
            job_client.create_custom_job(
                parent=PARENT, custom_job={"display_name": what, "job_spec": spec}
            )
    assert list(job_client.list_custom_jobs(parent=PARENT)) == []


def test_deleting_a_resource_cancels_the_jobs_on_it(
    tmp_path: Path, sdk_emulator: emulator.Emulator
) -> None:
    client, job_client = clients(sdk_emulator)
    make(client, "busy")
    container = trainer(tmp_path, "import time\ntime.sleep(60)")
    job = job_client.create_custom_job(
        parent=PARENT,
        custom_job={
            "display_name": "long",
            "job_spec": job_spec(container, "busy", ("n1-standard-4", 1), ("n1-standard-4", 1)),
        },
    )
    waiting = job_client.create_custom_job(
        parent=PARENT,
        custom_job={
            "display_name": "waits",
            "job_spec": job_spec(container, "busy", ("n1-standard-4", 1)),
        },
    )
    deadline = time.monotonic() + 30
    while job_client.get_custom_job(name=job.name).state.name != "JOB_STATE_RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    name = f"{PARENT}/persistentResources/busy"
    assert client.get_persistent_resource(name=name).resource_pools[0].used_replica_count == 2
    assert job_client.get_custom_job(name=waiting.name).state.name == "JOB_STATE_QUEUED"
    log = (sdk_emulator.root / "jobs" / waiting.name.rsplit("/", 1)[-1] / "job.log").read_text()
    assert f"1 replica(s) of persistent resource pool {name}#n1-standard-4: 2 of its 2" in log
    with pytest.raises(exceptions.FailedPrecondition, match="jobs run on it"):
        client.reboot_persistent_resource(name=name)

    operation = client.delete_persistent_resource(name=name)
    operation.result(timeout=30)
    for each in (job, waiting):
        assert job_client.get_custom_job(name=each.name).state.name == "JOB_STATE_CANCELLED"
    with pytest.raises(exceptions.NotFound):
        client.get_persistent_resource(name=name)


def test_resources_that_do_not_fit_are_refused(tmp_path: Path) -> None:
    with emulator.start(tmp_path / "root") as emu:
        client, _ = clients(emu)
        cases = {
            "Bad_Id": (POOLS, r"persistent_resource_id: 'Bad_Id' is not"),
            "x" * 64: (POOLS, "is not a PersistentResource id"),
            "zero": (
                [{"machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": 0}],
                r"resource_pools\[0\].replica_count: 0; accepted: 1 to",
            ),
            "unknown": (
                [{"machine_spec": {"machine_type": "n9-nonesuch"}, "replica_count": 1}],
                r"resource_pools\[0\].machine_spec.machineType: 'n9-nonesuch'",
            ),
            "none": ([], "no resource pools"),
            "scaling": (
                [
                    {
                        "machine_spec": {"machine_type": "n1-standard-4"},
                        "replica_count": 2,
                        "autoscaling_spec": {"min_replica_count": 0, "max_replica_count": 1},
                    }
                ],
                "min_replica_count: 0; accepted: more than 0",
            ),
        }
        for resource_id, (pools, message) in cases.items():
            with pytest.raises(exceptions.InvalidArgument, match=message):
                client.create_persistent_resource(
                    parent=PARENT,
                    persistent_resource_id=resource_id,
                    persistent_resource={"resource_pools": pools},
                )
        make(client, "twice")
        with pytest.raises(exceptions.AlreadyExists):
            make(client, "twice")
        assert [r.name for r in client.list_persistent_resources(parent=PARENT)] == [
            f"{PARENT}/persistentResources/twice"
        ]


def rest(emu: emulator.Emulator, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    token = Path(emu.root / "storage.token").read_text().strip()
    request = urllib.request.Request(
        f"{emu.rest_address}/{LOCATION}-aiplatform.googleapis.com/{path}",
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_rest_on_v1beta1(tmp_path: Path) -> None:
    with emulator.start(tmp_path / "root") as emu:
        status, operation = rest(
            emu,
            "POST",
            f"v1beta1/{PARENT}/persistentResources?persistentResourceId=rest",
            {
                "resourcePools": [
                    {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1}
                ]
            },
        )
        assert status == 200, operation
        assert "/persistentResources/rest/operations/" in operation["name"]
        time.sleep(0.3)
        status, got = rest(emu, "GET", f"v1beta1/{PARENT}/persistentResources/rest")
        assert status == 200, got
        assert got["state"] == "RUNNING"
        assert got["resourcePools"][0]["replicaCount"] == "1"
        status, refused = rest(
            emu,
            "POST",
            f"v1/{PARENT}/persistentResources?persistentResourceId=zero",
            {"resourcePools": [{"machineSpec": {"machineType": "n1-standard-4"}}]},
        )
        assert status == 400, refused
        assert "replica_count: 0" in refused["error"]["message"]
        status, changed = rest(
            emu,
            "PATCH",
            f"v1/{PARENT}/persistentResources/rest?updateMask=displayName",
            {"displayName": "renamed"},
        )
        assert status == 200, changed
        assert rest(emu, "GET", f"v1/{PARENT}/persistentResources/rest")[1]["displayName"] == (
            "renamed"
        )


@needs_gcloud
def test_gcloud_creates_describes_lists_and_deletes(tmp_path: Path) -> None:
    with emulator.start(tmp_path / "root") as emu:
        ok(
            gcloud(
                emu,
                "ai",
                "persistent-resources",
                "create",
                "--persistent-resource-id=cli",
                f"--region={LOCATION}",
                "--resource-pool-spec=replica-count=1,machine-type=n1-standard-4",
            )
        )
        time.sleep(0.3)
        described = json.loads(
            ok(
                gcloud(
                    emu,
                    "ai",
                    "persistent-resources",
                    "describe",
                    "cli",
                    f"--region={LOCATION}",
                    "--format=json",
                )
            )
        )
        assert described["state"] == "RUNNING"
        listed = json.loads(
            ok(
                gcloud(
                    emu,
                    "ai",
                    "persistent-resources",
                    "list",
                    f"--region={LOCATION}",
                    "--format=json",
                )
            )
        )
        assert [r["name"].rsplit("/", 1)[-1] for r in listed] == ["cli"]
        ok(gcloud(emu, "ai", "persistent-resources", "delete", "cli", f"--region={LOCATION}"))


def test_a_sweeps_trials_run_on_the_resource_one_pool_at_a_time(
    tmp_path: Path, sdk_emulator: emulator.Emulator
) -> None:
    client, job_client = clients(sdk_emulator)
    make(client, "sweep", [{"machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": 1}])
    body = "import hypertune, time\ntime.sleep(0.5)\n"
    body += "hypertune.HyperTune().report_hyperparameter_tuning_metric('m', 1.0)\n"
    spec = job_spec(trainer(tmp_path, body), "sweep", ("n1-standard-4", 1))
    tuning = job_client.create_hyperparameter_tuning_job(
        parent=PARENT,
        hyperparameter_tuning_job={
            "display_name": "on-cluster",
            "max_trial_count": 2,
            "parallel_trial_count": 2,
            "study_spec": {
                "metrics": [{"metric_id": "m", "goal": "MAXIMIZE"}],
                "parameters": [
                    {"parameter_id": "x", "discrete_value_spec": {"values": [1.0, 2.0]}}
                ],
                "algorithm": "GRID_SEARCH",
            },
            "trial_job_spec": spec,
        },
    )
    deadline = time.monotonic() + 60
    while not (done := job_client.get_hyperparameter_tuning_job(name=tuning.name)).end_time:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert done.state.name == "JOB_STATE_SUCCEEDED", done.error
    assert len(done.trials) == 2
    trials = list(job_client.list_custom_jobs(parent=PARENT))
    assert {j.job_spec.persistent_resource_id for j in trials} == {"sweep"}
    spans = sorted((j.start_time, j.end_time) for j in trials)
    assert spans[1][0] >= spans[0][1], "the pool holds one replica: the second trial waited"


def test_a_resource_outlives_a_restart_and_the_clock_moves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resources, "PROVISION_S", 600.0)
    name = f"{PARENT}/persistentResources/kept"
    with emulator.start(tmp_path / "root") as emu:
        client, _ = clients(emu)
        client.create_persistent_resource(
            parent=PARENT,
            persistent_resource_id="kept",
            persistent_resource={"resource_pools": POOLS},
        )
    with emulator.start(tmp_path / "root") as emu:
        client, _ = clients(emu)
        assert client.get_persistent_resource(name=name).state == State.PROVISIONING
        emu.advance_clock(by=timedelta(seconds=601))
        kept = client.get_persistent_resource(name=name)
        assert kept.state == State.RUNNING
        assert [p.id for p in kept.resource_pools] == ["n1-standard-4", "n1-standard-8"]
