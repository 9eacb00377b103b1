"""Vertex's rules for a PersistentResource's pools and for a job's fit to them, without a server
(``trainpool.emulator.persistent.rules``; sources in its docstring)."""

from __future__ import annotations

from typing import Any

import pytest
from google.cloud.aiplatform_v1.types import persistent_resource as pr

from trainpool.emulator.persistent import rules
from trainpool.errors import InputError

NAME = "projects/demo/locations/us-central1/persistentResources/r"
T4 = {
    "machine_type": "n1-standard-8",
    "accelerator_type": "NVIDIA_TESLA_T4",
    "accelerator_count": 1,
}


def resource(*pools: dict[str, Any]) -> pr.PersistentResource:
    made = pr.PersistentResource(name=NAME, resource_pools=list(pools))
    rules.check_pools(made)
    return made


def job(*pools: tuple[dict[str, Any], int]) -> dict[str, Any]:
    return {
        "persistentResourceId": "r",
        "workerPoolSpecs": [
            {
                "machineSpec": {
                    "machineType": m["machine_type"],
                    **(
                        {"acceleratorType": m["accelerator_type"], "acceleratorCount": 1}
                        if "accelerator_type" in m
                        else {}
                    ),
                },
                "replicaCount": n,
            }
            for m, n in pools
        ],
    }


def test_pools_get_ids_and_a_job_takes_replicas_of_the_pool_of_its_machine() -> None:
    made = resource(
        {"machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": 1},
        {"machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": 2},
        {"machine_spec": T4, "replica_count": 2, "id": "gpus"},
    )
    assert [p.id for p in made.resource_pools] == ["n1-standard-4", "n1-standard-4-2", "gpus"]
    assert rules.fit(made, job((T4, 1), (T4, 1)), "custom_job.job_spec") == {"gpus": 2}
    plain = ({"machine_type": "n1-standard-4"}, 1)
    assert rules.fit(made, job(plain), "custom_job.job_spec") == {"n1-standard-4": 1}


def test_the_autoscaling_maximum_is_what_a_pool_holds() -> None:
    made = resource(
        {
            "machine_spec": T4,
            "replica_count": 1,
            "autoscaling_spec": {"min_replica_count": 1, "max_replica_count": 3},
        }
    )
    assert rules.fit(made, job((T4, 1), (T4, 2)), "custom_job.job_spec") == {"n1-standard-8": 3}
    with pytest.raises(InputError, match="holds at most 3; accepted: at most 3"):
        rules.fit(made, job((T4, 1), (T4, 3)), "custom_job.job_spec")


def test_a_machine_without_its_accelerator_is_another_machine() -> None:
    made = resource({"machine_spec": T4, "replica_count": 1})
    with pytest.raises(InputError) as err:
        rules.fit(
            made,
            job(
                ({"machine_type": "n1-standard-8"}, 1),
            ),
            "custom_job.job_spec",
        )
    assert str(err.value).startswith(
        "custom_job.job_spec.workerPoolSpecs[0].machineSpec: n1-standard-8: the persistent "
        f"resource {NAME} has no resource pool of that machine; accepted: a machine of one of "
        "its pools (n1-standard-8: n1-standard-8 with 1 x NVIDIA_TESLA_T4, at most 1)"
    )


@pytest.mark.parametrize(
    ("pool", "field"),
    [
        ({"machine_spec": {}, "replica_count": 1}, "resource_pools[0].machine_spec.machine_type"),
        ({"machine_spec": {"machine_type": "n1-standard-4"}}, "resource_pools[0].replica_count"),
        (
            {"machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": 1001},
            "resource_pools[0].replica_count",
        ),
        (
            {
                "machine_spec": {"machine_type": "n1-standard-4"},
                "replica_count": 2,
                "autoscaling_spec": {"min_replica_count": 3, "max_replica_count": 4},
            },
            "autoscaling_spec.min_replica_count",
        ),
        (
            {
                "machine_spec": {"machine_type": "n1-standard-4"},
                "replica_count": 2,
                "autoscaling_spec": {"min_replica_count": 1, "max_replica_count": 1},
            },
            "autoscaling_spec.max_replica_count",
        ),
    ],
)
def test_pools_vertex_would_not_create_are_refused(pool: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError, match="accepted") as err:
        resource(pool)
    assert field in str(err.value)


def test_two_pools_with_one_id_are_refused() -> None:
    pool = {"machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": 1, "id": "a"}
    with pytest.raises(InputError, match=r"resource_pools\[1\].id: 'a' names two pools"):
        resource(pool, pool)
