"""The cluster request: loading, typed errors, and rendering to REST JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainpool.spec import SpecError, load_request, render_job_fields, render_job_spec

IMAGE = "us-docker.pkg.dev/p/r/trainer:1"


def test_yaml_text_file_and_dict_load_the_same(tmp_path: Path) -> None:
    text = f"image_uri: {IMAGE}\nprimary: {{machine_type: n1-standard-4}}\n"
    path = tmp_path / "req.yaml"
    path.write_text(text)
    expected = load_request({"image_uri": IMAGE, "primary": {"machine_type": "n1-standard-4"}})
    assert load_request(text) == expected
    assert load_request(path) == expected
    assert load_request(str(path)) == expected


def test_whole_floats_from_kfp_become_ints() -> None:
    request = load_request({"primary": {"machine_type": "m", "replica_count": 1.0}})
    assert request.primary is not None
    assert request.primary.replica_count == 1
    assert isinstance(request.primary.replica_count, int)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"primary": {"machine_type": "m", "accelerator_count": 4.5}},
            "primary.accelerator_count: 4.5 is not accepted",
        ),
        (
            {"primary": {"machine_typ": "m"}},
            "primary.machine_typ: unknown key 'machine_typ'; accepted: accelerator_count, "
            "accelerator_type, args, boot_disk_size_gb, boot_disk_type, command, env, image_uri, "
            "machine_type, python_package, replica_count",
        ),
        (
            {"reduction_server": {"image_uri": "x"}},
            "reduction_server.image_uri: unknown key 'image_uri'; accepted: accelerator_count, "
            "accelerator_type, boot_disk_size_gb, boot_disk_type, machine_type, replica_count",
        ),
        (
            {"scheduling_strategy": "CHEAP"},
            "scheduling_strategy: 'CHEAP' is not accepted; accepted: 'STANDARD', 'SPOT' or "
            "'FLEX_START'",
        ),
        ("- a\n- b\n", 'request: ["a", "b"] is not a mapping'),
        ("primary: [unclosed", "request: not valid YAML or JSON"),
    ],
)
def test_bad_input_names_field_value_and_accepted(data: object, expected: str) -> None:
    with pytest.raises(SpecError) as err:
        load_request(data)  # type: ignore[arg-type]
    assert str(err.value).startswith(expected)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="is not a file"):
        load_request(tmp_path / "nope.yaml")


def test_render_primary_and_evaluator_keeps_skipped_pools() -> None:
    request = load_request(
        {
            "image_uri": IMAGE,
            "args": ["--epochs=3"],
            "env": {"A": "1"},
            "primary": {"machine_type": "n1-standard-4", "replica_count": 1},
            "evaluators": {"machine_type": "n1-standard-8", "image_uri": "eval:1", "args": []},
            "timeout": "3600s",
            "scheduling_strategy": "SPOT",
            "base_output_directory": "gs://bkt/out",
            "labels": {"team_name": "x"},
            "encryption_key": "projects/p/locations/l/keyRings/r/cryptoKeys/k",
        }
    )
    assert render_job_spec(request) == {
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "n1-standard-4"},
                "replicaCount": 1,
                "containerSpec": {
                    "imageUri": IMAGE,
                    "args": ["--epochs=3"],
                    "env": [{"name": "A", "value": "1"}],
                },
            },
            {},
            {},
            {
                "machineSpec": {"machineType": "n1-standard-8"},
                "containerSpec": {"imageUri": "eval:1", "env": [{"name": "A", "value": "1"}]},
            },
        ],
        "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/out"},
        "scheduling": {"timeout": "3600s", "strategy": "SPOT"},
    }
    assert render_job_fields(request) == {
        "labels": {"team_name": "x"},
        "encryptionSpec": {"kmsKeyName": "projects/p/locations/l/keyRings/r/cryptoKeys/k"},
    }


def test_render_parameter_servers_trims_trailing_pools_and_python_package() -> None:
    request = load_request(
        {
            "primary": {
                "machine_type": "n1-standard-4",
                "boot_disk_type": "pd-ssd",
                "boot_disk_size_gb": 200,
                "args": ["--x"],
                "python_package": {
                    "executor_image_uri": "exec:1",
                    "package_uris": ["gs://bkt/t.tar.gz"],
                    "python_module": "trainer.task",
                },
            },
            "parameter_servers": {"machine_type": "n1-highmem-8", "replica_count": 2},
        }
    )
    assert render_job_spec(request) == {
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "n1-standard-4"},
                "pythonPackageSpec": {
                    "executorImageUri": "exec:1",
                    "packageUris": ["gs://bkt/t.tar.gz"],
                    "pythonModule": "trainer.task",
                    "args": ["--x"],
                },
                "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200},
            },
            {},
            {"machineSpec": {"machineType": "n1-highmem-8"}, "replicaCount": 2},
        ]
    }
