"""The machine catalog: data files with sources, lookups and did-you-mean."""

from __future__ import annotations

import pytest

from trainpool import catalog
from trainpool.catalog.csvdata import read_rows

DATA_FILES = (
    ("trainpool.catalog", "machines.csv"),
    ("trainpool.catalog", "fixed_gpu_machines.csv"),
    ("trainpool.catalog", "accelerators.csv"),
    ("trainpool.catalog", "n1_accelerators.csv"),
    ("trainpool.catalog", "n1_gpu_egress.csv"),
    ("trainpool.catalog", "tpu_machines.csv"),
    ("trainpool.catalog", "vertex_regions.csv"),
    ("trainpool.catalog", "regions.csv"),
    ("trainpool.catalog", "prices.csv"),
    ("trainpool.catalog", "unsupported_machines.csv"),
    ("trainpool.catalog", "prebuilt_containers.csv"),
    ("trainpool.catalog.included", "prebuilt_packages.csv"),  # its own package's data
)


@pytest.mark.parametrize(("package", "name"), DATA_FILES)
def test_every_row_has_a_source_and_a_verified_flag(package: str, name: str) -> None:
    rows = read_rows(name, package)
    assert rows
    for row in rows:
        assert row["source"].strip(), row
        assert row["verified"] in ("true", "false"), row


def test_documented_figures() -> None:
    reducer = catalog.machine("n1-highcpu-16")
    assert (reducer.vcpus, reducer.egress_gbps, reducer.price_usd_per_hour) == (16, 32, 0.5668)
    assert reducer.verified and reducer.fixed_gpu is None
    assert catalog.vm_egress_gbps("n1-highmem-96", "NVIDIA_TESLA_V100", 8) == 100
    assert catalog.vm_egress("n1-highmem-96", "NVIDIA_TESLA_V100", 8).verified
    assert not catalog.vm_egress("n1-standard-16", "NVIDIA_TESLA_V100", 4).verified
    assert catalog.vm_egress_gbps("n1-standard-16", "NVIDIA_TESLA_P100", 4) == 32
    assert catalog.vm_egress_gbps("a2-megagpu-16g") == 100
    assert catalog.vm_egress_gbps("a2-highgpu-4g") == 50
    assert catalog.accelerator_price("NVIDIA_TESLA_V100") == 2.48
    assert catalog.accelerator_price("NVIDIA_B200") is None


def test_fixed_gpu_and_attachable_counts() -> None:
    gpu = catalog.fixed_gpu("a3-highgpu-8g")
    assert gpu is not None
    assert (gpu.accelerator_type, gpu.accelerator_count, gpu.gpudirect) == (
        "NVIDIA_H100_80GB",
        8,
        True,
    )
    assert catalog.fixed_gpu("n1-standard-4") is None
    assert catalog.allowed_counts("n1-standard-16", "NVIDIA_TESLA_V100") == (2, 4, 8)
    assert catalog.allowed_counts("n1-standard-64", "NVIDIA_TESLA_P100") == ()
    assert catalog.allowed_counts("n2-standard-16", "NVIDIA_TESLA_T4") == ()
    assert catalog.allowed_counts("a2-highgpu-2g", "NVIDIA_TESLA_A100") == (2,)
    assert catalog.attachable("n1-highmem-96") == {
        "NVIDIA_TESLA_P4": (4,),
        "NVIDIA_TESLA_T4": (4,),
        "NVIDIA_TESLA_V100": (8,),
    }


def test_unknown_names_suggest_the_closest() -> None:
    with pytest.raises(catalog.UnknownName) as err:
        catalog.machine("n1-highcpu16")
    assert err.value.suggestions[0] == "n1-highcpu-16"
    with pytest.raises(catalog.UnknownName) as err:
        catalog.accelerator("NVIDIA_TESLA_V10")
    assert str(err.value) == (
        "'NVIDIA_TESLA_V10' is not a known accelerator type; did you mean NVIDIA_TESLA_V100, "
        "NVIDIA_TESLA_P100, NVIDIA_TESLA_A100?"
    )


def test_enum_numbers_match_the_proto() -> None:
    from google.cloud.aiplatform_v1.types import AcceleratorType

    for acc in catalog.accelerators().values():
        assert AcceleratorType[acc.name].value == acc.enum_value
    assert catalog.accelerator_by_enum(3) == "NVIDIA_TESLA_V100"


@pytest.mark.parametrize("gpu", ["NVIDIA_TESLA_P100", "NVIDIA_TESLA_P4"])
def test_p100_and_p4_do_not_raise_n1_egress(gpu: str) -> None:
    # vertex-facts D.2: N1 + P100 or P4 is "32 max (same as plain N1)"; D.1: n1-*-8 is 16.
    assert catalog.vm_egress_gbps("n1-standard-8", gpu, 4) == 16
    assert catalog.vm_egress_gbps("n1-standard-4", gpu, 1) == 10
    assert catalog.vm_egress_gbps("n1-highmem-16", gpu, 2) == 32
    assert catalog.vm_egress("n1-standard-8", gpu, 4).verified
