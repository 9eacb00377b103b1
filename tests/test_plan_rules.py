"""Every validation rule, as a request error (request field names) or warning."""

from __future__ import annotations

from typing import Any

import pytest

from trainpool.plan import PlanError, plan_cluster

IMG = {"image_uri": "img:1"}
V100 = {
    "machine_type": "n1-highmem-96",
    "accelerator_type": "NVIDIA_TESLA_V100",
    "accelerator_count": 8,
}
CPU = {"machine_type": "n1-standard-8"}


def errors(request: dict[str, Any]) -> str:
    with pytest.raises(PlanError) as err:
        plan_cluster({**IMG, **request})
    return str(err.value)


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (
            {"workers": CPU},
            "primary: missing; accepted: a primary pool with replica count 1 "
            "(skip other pools with {}, never the primary)",
        ),
        (
            {"primary": {**CPU, "replica_count": 2}},
            "primary.replica_count: 2 is not accepted; "
            "accepted: 1 (the primary is one replica; put more replicas in workers)",
        ),
        (
            {"primary": CPU, "workers": {**CPU, "replica_count": 0}},
            "workers.replica_count: 0 is not accepted; accepted: a whole number from 1 to 1000",
        ),
        (
            {"primary": {"machine_type": "n1-standrd-8"}},
            "primary.machine_type: 'n1-standrd-8' is not a machine type Vertex training supports; "
            "did you mean n1-standard-8, n4-standard-8, n2-standard-8? (all: `trainpool catalog`); "
            "or set allow_unknown_machine_types if Vertex has it and the catalog does not yet",
        ),
        (
            {"primary": {}},
            "primary.machine_type: missing; accepted: a machine type such as "
            "n1-standard-8 (see `trainpool catalog`)",
        ),
        (
            {"primary": {**CPU, "accelerator_type": "NVIDIA_TESLA_V1OO", "accelerator_count": 1}},
            "primary.accelerator_type: 'NVIDIA_TESLA_V1OO' is not a known accelerator type; did "
            "you mean NVIDIA_TESLA_V100",
        ),
        (
            {
                "primary": {
                    "machine_type": "n1-standard-16",
                    "accelerator_type": "NVIDIA_TESLA_V100",
                    "accelerator_count": 2,
                },
                "workers": {
                    "machine_type": "n1-standard-16",
                    "accelerator_type": "NVIDIA_TESLA_V100",
                    "accelerator_count": 1,
                },
            },
            "workers.accelerator_count: 1 NVIDIA_TESLA_V100 is not allowed on n1-standard-16; "
            "accepted: 2, 4, 8",
        ),
        (
            {
                "primary": {
                    "machine_type": "n1-standard-64",
                    "accelerator_type": "NVIDIA_TESLA_P100",
                    "accelerator_count": 4,
                }
            },
            "primary.accelerator_type: NVIDIA_TESLA_P100 is not attachable to n1-standard-64; "
            "accepted on n1-standard-64: NVIDIA_TESLA_P4 x 4; NVIDIA_TESLA_T4 x 4; "
            "NVIDIA_TESLA_V100 x 8",
        ),
        (
            {
                "primary": {
                    "machine_type": "n2-standard-16",
                    "accelerator_type": "NVIDIA_TESLA_T4",
                    "accelerator_count": 1,
                }
            },
            "primary.accelerator_type: NVIDIA_TESLA_T4 is not attachable to n2-standard-16; "
            "accepted on n2-standard-16: no accelerators (CPU-only machine type)",
        ),
        (
            {"primary": {"machine_type": "n1-standard-16", "accelerator_type": "NVIDIA_TESLA_T4"}},
            "primary.accelerator_count: missing for NVIDIA_TESLA_T4 on n1-standard-16; accepted: "
            "1, 2, 4",
        ),
        (
            {"primary": {"machine_type": "a2-highgpu-2g", "accelerator_type": "NVIDIA_TESLA_V100"}},
            "primary.accelerator_type: NVIDIA_TESLA_V100 does not match a2-highgpu-2g, which comes "
            "with 2 x NVIDIA_TESLA_A100; accepted: NVIDIA_TESLA_A100 (or leave it out)",
        ),
        (
            {"primary": {"machine_type": "a2-highgpu-2g", "accelerator_count": 4}},
            "primary.accelerator_count: 4 does not match a2-highgpu-2g, which comes with 2 x "
            "NVIDIA_TESLA_A100; accepted: 2 (or leave it out)",
        ),
        (
            {"primary": {**CPU, "accelerator_type": "NVIDIA_TESLA_T4", "accelerator_count": -1}},
            "primary.accelerator_count: -1 is not accepted; accepted: a whole number >= 1",
        ),
        (
            {"primary": V100, "workers": V100, "parameter_servers": CPU, "reduction_server": {}},
            "reduction_server: given together with parameter_servers; accepted: one of them (both "
            "use pool 2)",
        ),
        (
            {"primary": CPU, "workers": CPU, "reduction_server": {}},
            "reduction_server: Reduction Server with CPU-only primary and workers; accepted: GPU "
            "primary or workers",
        ),
        (
            {
                "primary": V100,
                "workers": V100,
                "reduction_server": {"accelerator_type": "NVIDIA_TESLA_T4", "accelerator_count": 1},
            },
            "reduction_server.accelerator_type: NVIDIA_TESLA_T4 is not accepted; accepted: no "
            "accelerators (reducers are CPU-only)",
        ),
        (
            {
                "primary": V100,
                "workers": V100,
                "reduction_server": {"machine_type": "a2-highgpu-1g"},
            },
            "reduction_server.machine_type: 'a2-highgpu-1g' has GPUs; accepted: a CPU machine type",
        ),
        (
            {"primary": {**CPU, "boot_disk_size_gb": 50}},
            "primary.boot_disk_size_gb: 50 is not accepted; accepted: a whole number of GB from "
            "100 to 64000",
        ),
        (
            {"primary": {**CPU, "boot_disk_type": "ssd"}},
            "primary.boot_disk_type: 'ssd' is not accepted; accepted: pd-ssd, pd-standard, "
            "hyperdisk-balanced",
        ),
        (
            {"primary": CPU, "timeout": "1h"},
            "timeout: '1h' is not accepted; accepted: a duration in seconds such as \"3600s\"",
        ),
        (
            {"primary": CPU, "max_wait_duration": "60s"},
            "max_wait_duration: '60s' with strategy None; accepted: only with strategy FLEX_START",
        ),
        (
            {"primary": CPU, "base_output_directory": "/tmp/out"},
            "base_output_directory: '/tmp/out' is not a gs:// URI; accepted: gs://BUCKET/OBJECT",
        ),
        (
            {
                "primary": {
                    **CPU,
                    "image_uri": "own:1",
                    "python_package": {
                        "executor_image_uri": "e",
                        "package_uris": ["gs://bkt/t.tar.gz"],
                        "python_module": "m",
                    },
                }
            },
            "primary.python_package: given together with a container; accepted: a container image "
            "or a Python package, not both",
        ),
        (
            {
                "image_uri": "default:1",
                "primary": {
                    **CPU,
                    "command": ["python3", "-m", "x"],
                    "python_package": {
                        "executor_image_uri": "e",
                        "package_uris": ["gs://bkt/t.tar.gz"],
                        "python_module": "m",
                    },
                },
            },
            "primary.command: ['python3', '-m', 'x'] is not used with a Python package, which "
            "runs `python -m MODULE`; accepted: args and env, or a container image instead",
        ),
    ],
)
def test_refused(request_: dict[str, Any], expected: str) -> None:
    assert errors(request_).startswith(expected)


def test_every_problem_is_reported_at_once() -> None:
    message = errors({"primary": {"machine_type": "x1", "replica_count": 3}, "timeout": "soon"})
    assert message.splitlines() == [
        "primary.replica_count: 3 is not accepted; accepted: 1 (the primary is one replica; put "
        "more replicas in workers)",
        "primary.machine_type: 'x1' is not a machine type Vertex training supports; see "
        "`trainpool catalog`; or set allow_unknown_machine_types if Vertex has it and the "
        "catalog does not yet",
        "timeout: 'soon' is not accepted; accepted: a duration in seconds such as \"3600s\" or "
        '"1.5s" (ASCII digits, at most 315,576,000,000s), more than 0s',
    ]


def warnings(request: dict[str, Any]) -> list[str]:
    return plan_cluster({**IMG, **request}).warnings


def test_warnings() -> None:
    assert warnings({"primary": V100, "reduction_server": {}}) == [
        "reduction_server: 1 GPU replica; a Reduction Server needs at least two GPU replicas to "
        "reduce anything"
    ]
    assert warnings({"primary": CPU, "evaluators": {**CPU, "replica_count": 2}}) == [
        "evaluators.replica_count: 2 evaluators; TensorFlow expects at most one"
    ]
    assert warnings(
        {"primary": V100, "workers": V100, "reduction_server": {"machine_type": "e2-highcpu-16"}}
    )[0].startswith(
        "reduction_server.machine_type: e2-highcpu-16 has unverified catalog figures (egress 16 "
        "Gbps"
    )
    assert warnings(
        {
            "primary": {"machine_type": "a3-highgpu-8g"},
            "workers": {"machine_type": "a3-highgpu-8g"},
            "reduction_server": {},
        }
    ) == [
        f"{pool}.machine_type: a3-highgpu-8g has GPUDirect networking (1000 Gbps); a Reduction "
        "Server does not pay there"
        for pool in ("primary", "workers")
    ]
    assert plan_cluster({"primary": CPU}).warnings == [
        "primary.image_uri: no container image; accepted: an image URI or a Python package (a "
        "planned pool without one gets the pipeline's built image at launch)"
    ]
