"""Location rules: a pool must be offered where the job runs; regions nearest first; Spot."""

from __future__ import annotations

import pytest

from trainpool import catalog
from trainpool.plan import PlanError, plan_cluster

H100X8 = {"machine_type": "a3-highgpu-8g"}


def test_a_machine_missing_from_the_location_is_refused_with_the_regions_that_have_it() -> None:
    with pytest.raises(PlanError) as err:
        plan_cluster({"image_uri": "img:1", "primary": H100X8}, location="europe-west2")
    expected = catalog.nearest_first(
        catalog.regions_of("a3-highgpu-8g") or frozenset(), "europe-west2"
    )
    assert expected[:5] == [
        "europe-north1",
        "europe-west1",
        "europe-west3",
        "europe-west4",
        "europe-west9",
    ]
    message = str(err.value)
    assert message.startswith(
        "primary.machine_type: 'a3-highgpu-8g' is not offered in europe-west2; accepted: a "
        "location that has it, nearest first: " + ", ".join(expected[:8])
    )


def test_the_field_named_is_the_accelerator_for_cloud_tpu() -> None:
    pool = {"machine_type": "cloud-tpu", "accelerator_type": "TPU_V3", "accelerator_count": 8}
    with pytest.raises(PlanError) as err:
        plan_cluster({"image_uri": "img:1", "primary": pool}, location="europe-west4")
    assert str(err.value) == (
        "primary.accelerator_type: 'TPU_V3' is not offered in europe-west4; accepted: a location "
        "that has it, nearest first: us-central1"
    )


def test_offered_locations_plan_and_unknown_region_data_is_not_checked() -> None:
    for region in catalog.regions_of("a3-highgpu-8g") or ():
        plan_cluster({"image_uri": "img:1", "primary": H100X8}, location=region)
    v100 = {
        "machine_type": "n1-standard-16",
        "accelerator_type": "NVIDIA_TESLA_V100",
        "accelerator_count": 2,
    }
    assert catalog.regions_of("NVIDIA_TESLA_V100") is None
    plan_cluster({"image_uri": "img:1", "primary": v100}, location="asia-east2")


def test_nearest_first_orders_geography_then_continent_then_the_rest() -> None:
    regions = frozenset(
        {"asia-east1", "europe-west4", "us-east4", "southamerica-east1", "us-west1"}
    )
    assert catalog.nearest_first(regions, "us-central1") == [
        "us-east4",
        "us-west1",
        "southamerica-east1",
        "asia-east1",
        "europe-west4",
    ]


def test_spot_and_cheapest_region_of_a_gpu_cluster() -> None:
    plan = plan_cluster(
        {"image_uri": "img:1", "primary": H100X8, "workers": {**H100X8, "replica_count": 1}}
    )
    assert plan.cost["jobPerHour"] == 2 * 88.49
    assert plan.cost["spotPerHour"] == 2 * 50.61
    assert plan.cost["cheapestRegion"] == {
        "region": "us-central1",
        "perHour": 2 * 88.49,
        "spotPerHour": 2 * 50.61,
        "regionsCompared": ["us-central1"],
        "note": "only us-central1 has a price for every pool in the catalog; other regions are "
        "not compared",
    }


def test_cheapest_region_leaves_us_central1_when_it_lacks_the_price() -> None:
    plan = plan_cluster(
        {"image_uri": "img:1", "primary": {"machine_type": "a3-megagpu-8g"}}, location="us-east4"
    )
    assert plan.cost["unpriced"] == ["primary"]
    best = plan.cost["cheapestRegion"]
    assert (best["region"], best["perHour"], best["spotPerHour"]) == ("us-east4", 92.94, None)
    assert best["regionsCompared"] == ["europe-west4", "us-east4", "us-east5"]
