"""The escape hatch: an unknown machine type is refused, or accepted with a warning when asked."""

from __future__ import annotations

import pytest

from trainpool.plan import PlanError, plan_cluster, validate_custom_job_spec

NEW = {"machine_type": "a5-futuregpu-8g", "accelerator_type": "NVIDIA_B200", "accelerator_count": 8}
WARNING = (
    "primary.machine_type: 'a5-futuregpu-8g' is not in the catalog; accepted because "
    "allow_unknown_machine_types is set: Vertex decides, and the plan checks no accelerator "
    "counts, egress or price for it"
)


def test_refused_without_the_hatch() -> None:
    with pytest.raises(PlanError) as err:
        plan_cluster({"image_uri": "img:1", "primary": NEW})
    assert "or set allow_unknown_machine_types if Vertex has it" in str(err.value)


@pytest.mark.parametrize("how", ["request", "argument"])
def test_accepted_with_a_warning_from_the_request_or_the_argument(how: str) -> None:
    request = {"image_uri": "img:1", "primary": NEW}
    if how == "request":
        plan = plan_cluster({**request, "allow_unknown_machine_types": True})
    else:
        plan = plan_cluster(request, allow_unknown_machine_types=True)
    assert plan.worker_pool_specs[0]["machineSpec"] == {
        "machineType": "a5-futuregpu-8g",
        "acceleratorType": "NVIDIA_B200",
        "acceleratorCount": 8,
    }
    assert WARNING in plan.warnings
    assert plan.cost["unpriced"] == ["primary"]


def test_the_hatch_still_checks_the_accelerator_name() -> None:
    with pytest.raises(PlanError) as err:
        plan_cluster(
            {"image_uri": "img:1", "primary": {**NEW, "accelerator_type": "NVIDIA_B300"}},
            allow_unknown_machine_types=True,
        )
    assert str(err.value).startswith("primary.accelerator_type: 'NVIDIA_B300' is not a known")


def test_a_reduction_server_on_an_unknown_type_cannot_be_sized() -> None:
    gpu = {"machine_type": "a2-highgpu-4g"}
    with pytest.raises(PlanError) as err:
        plan_cluster(
            {
                "image_uri": "img:1",
                "primary": gpu,
                "reduction_server": {"machine_type": "n9-cpu-16"},
            },
            allow_unknown_machine_types=True,
        )
    assert str(err.value) == (
        "reduction_server.machine_type: 'n9-cpu-16' is not in the catalog, so its egress is "
        "unknown; accepted: a known CPU machine type such as n1-highcpu-16 (reducers are sized "
        "by egress)"
    )


def test_spec_validation_and_the_emulator_refuse_unless_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainpool.emulator.api import requests as validation

    spec = {
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "a5-futuregpu-8g"},
                "replicaCount": 1,
                "containerSpec": {"imageUri": "img:1"},
            }
        ]
    }
    with pytest.raises(PlanError):
        validate_custom_job_spec(spec)
    assert validate_custom_job_spec(spec, allow_unknown_machine_types=True) == [
        "workerPoolSpecs[0].machineSpec.machineType: 'a5-futuregpu-8g' is not in the catalog; "
        "accepted because allow_unknown_machine_types is set: Vertex decides, and the plan "
        "checks no accelerator counts, egress or price for it"
    ]
    with pytest.raises(Exception, match="a5-futuregpu-8g"):
        validation.check_job_spec(spec)
    monkeypatch.setenv(validation.ALLOW_UNKNOWN_ENV, "1")
    validation.check_job_spec(spec)
