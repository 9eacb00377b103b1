"""Key style and int helpers, canonical spec form, and the flat pipeline overrides."""

from __future__ import annotations

import pytest

from trainpool.spec import (
    SpecError,
    apply_overrides,
    coerce_ints,
    normalize_spec,
    to_rest,
    to_snake,
)


def test_coerce_ints_turns_whole_floats_only() -> None:
    assert coerce_ints({"a": [1.0, 2.5, True, "3"], "b": {"c": 4.0}}) == {
        "a": [1, 2.5, True, "3"],
        "b": {"c": 4},
    }
    assert type(coerce_ints({"c": 4.0})["c"]) is int


def test_key_conversion_round_trips_and_leaves_labels_alone() -> None:
    snake = {
        "worker_pool_specs": [{"machine_spec": {"accelerator_count": 2}}, {}],
        "labels": {"team_name": "a"},
    }
    rest = {
        "workerPoolSpecs": [{"machineSpec": {"acceleratorCount": 2}}, {}],
        "labels": {"team_name": "a"},
    }
    assert to_rest(snake) == rest
    assert to_snake(rest) == snake


def test_normalize_reads_proto_to_dict_form() -> None:
    from google.cloud.aiplatform_v1.types import CustomJobSpec

    rest = {
        "workerPoolSpecs": [
            {
                "machineSpec": {
                    "machineType": "n1-standard-16",
                    "acceleratorType": "NVIDIA_TESLA_V100",
                    "acceleratorCount": 2,
                },
                "replicaCount": 1,
                "containerSpec": {"imageUri": "x", "env": [{"name": "A", "value": "1"}]},
            },
            {},
            {},
            {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1},
        ],
        "scheduling": {"timeout": "60s", "strategy": "SPOT"},
    }
    proto_dict = CustomJobSpec.to_dict(CustomJobSpec(**to_snake(rest)))
    assert proto_dict["worker_pool_specs"][0]["replica_count"] == "1"
    assert normalize_spec(proto_dict) == rest


def test_overrides_apply_flat_knobs() -> None:
    request = {
        "primary": {"machine_type": "n1-standard-4"},
        "reduction_server": {"machine_type": "n1-highcpu-16"},
    }
    assert apply_overrides(
        request,
        worker_count=3,
        machine_type="n1-standard-16",
        accelerator_type="NVIDIA_TESLA_V100",
        accelerator_count=2,
        reduction_server="off",
    ) == {
        "primary": {
            "machine_type": "n1-standard-16",
            "accelerator_type": "NVIDIA_TESLA_V100",
            "accelerator_count": 2,
        },
        "workers": {
            "machine_type": "n1-standard-16",
            "replica_count": 3,
            "accelerator_type": "NVIDIA_TESLA_V100",
            "accelerator_count": 2,
        },
    }
    assert request["primary"] == {"machine_type": "n1-standard-4"}
    assert apply_overrides(request) == request
    assert apply_overrides({"primary": {}}, reduction_server="on") == {
        "primary": {},
        "reduction_server": {},
    }


def test_overrides_refuse_bad_mode() -> None:
    with pytest.raises(SpecError) as err:
        apply_overrides({}, reduction_server="maybe", worker_count=-2)
    assert str(err.value) == (
        "reduction_server: 'maybe' is not accepted; accepted: request, on, off\n"
        "worker_count: -2 is not accepted; accepted: -1 (keep the request) or a whole number >= 0"
    )


def test_normalize_keeps_user_values_that_look_like_defaults() -> None:
    from google.cloud.aiplatform_v1.types import CustomJobSpec

    pool = {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": 1,
        "containerSpec": {
            "imageUri": "x",
            "args": ["--seed=0", "0", ""],
            "env": [{"name": "ZERO", "value": "0"}, {"name": "EMPTY", "value": ""}],
        },
    }
    proto_dict = CustomJobSpec.to_dict(CustomJobSpec(**to_snake({"workerPoolSpecs": [pool]})))
    normalized = normalize_spec(proto_dict)["workerPoolSpecs"][0]["containerSpec"]
    assert normalized["args"] == ["--seed=0", "0", ""]
    assert normalized["env"][0] == {"name": "ZERO", "value": "0"}
    assert normalized["env"][1]["name"] == "EMPTY"
    assert normalized["env"][1].get("value", "") == ""
