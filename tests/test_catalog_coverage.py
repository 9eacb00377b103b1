"""Every machine type and accelerator on the pages read plans, or is refused with its reason."""

from __future__ import annotations

import subprocess
import sys

import pytest

from trainpool import catalog
from trainpool.catalog.refresh.pages import load
from trainpool.plan import PlanError, plan_cluster

D5_SERIES = ("a4x-", "a4-", "a3-", "a2-", "g2-", "g4-", "e2-", "n4-", "n2-", "n1-", "c2-", "m1-")
"""The series of Vertex's training machine list (vertex-facts D.5)."""


def _pool(machine_type: str) -> dict[str, object]:
    shapes = catalog.tpu_shapes().get(machine_type)
    if shapes is None:
        return {"machine_type": machine_type}
    shape = shapes[0]
    if not shape.topology:
        return {
            "machine_type": machine_type,
            "accelerator_type": shape.accelerator_type,
            "accelerator_count": shape.chips,
        }
    return {"machine_type": machine_type, "tpu_topology": shape.topology}


@pytest.mark.parametrize("machine_type", sorted(catalog.machines()) + sorted(catalog.tpu_shapes()))
def test_every_catalog_machine_type_plans_alone(machine_type: str) -> None:
    plan = plan_cluster({"image_uri": "img:1", "primary": _pool(machine_type)})
    assert plan.worker_pool_specs[0]["machineSpec"]["machineType"] == machine_type


def test_every_series_of_the_vertex_list_is_in_the_catalog() -> None:
    names = list(catalog.machines()) + list(catalog.tpu_shapes())
    for series in D5_SERIES:
        assert any(name.startswith(series) for name in names), series
    assert {"ct5lp-hightpu-1t", "ct5lp-hightpu-4t", "ct5lp-hightpu-8t", "ct6e-standard-4t"} <= set(
        names
    )


def test_every_topology_of_the_tpu_page_plans() -> None:
    for row in load("vertex_tpu_configure_compute").rows:
        pool = _pool(row["machine_type"])
        if row["topology"]:
            pool["tpu_topology"] = row["topology"]
        else:
            pool["accelerator_type"] = row["accelerator_type"]
        plan = plan_cluster({"image_uri": "img:1", "primary": pool})
        assert plan.cost["pools"] == [] or plan.cost["pools"][0]["replicaCount"] == 1


@pytest.mark.parametrize("row", load("vertex_unsupported").rows, ids=lambda row: row["name"])
def test_types_vertex_refuses_are_refused_with_the_page_reason(row: dict[str, str]) -> None:
    name = row["name"].replace("*", "standard-8")
    for allow in (False, True):
        with pytest.raises(PlanError) as err:
            plan_cluster({"primary": {"machine_type": name}}, allow_unknown_machine_types=allow)
        assert str(err.value).startswith(
            f"primary.machine_type: {name!r} is not accepted by Vertex training: {row['reason']};"
        )


@pytest.mark.parametrize("accelerator", sorted(catalog.accelerators()))
def test_every_accelerator_is_carried_by_some_machine_type(accelerator: str) -> None:
    from trainpool.catalog.where import carriers

    assert carriers(accelerator), accelerator


def test_region_data_names_only_catalog_types_and_vertex_regions() -> None:
    vertex = set(catalog.vertex_regions())
    known = set(catalog.machines()) | {
        shape.region_key for shapes in catalog.tpu_shapes().values() for shape in shapes
    }
    from trainpool.catalog.locations import offering_regions

    for name, regions in offering_regions().items():
        assert name in known, name
        assert regions <= vertex, name


def test_prices_name_catalog_types_and_spot_is_cheaper() -> None:
    from trainpool.catalog.prices import price_table

    known = set(catalog.machines()) | set(catalog.tpu_shapes()) | set(catalog.accelerators())
    for name, regions in price_table().items():
        assert name in known, name
        for region, price in regions.items():
            assert region in catalog.vertex_regions(), (name, region)
            if price.spot is not None and price.on_demand is not None:
                assert price.spot < price.on_demand, (name, region)


def test_generated_csvs_match_the_saved_pages() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trainpool.catalog.refresh", "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
