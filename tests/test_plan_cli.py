"""``trainpool plan`` and ``trainpool catalog`` as real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "requests" / "reduction_server_v100.yaml"

pytestmark = pytest.mark.timeout(120)


def trainpool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from trainpool.cli import main; main()", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )


def test_plan_json_has_the_documented_shape() -> None:
    done = trainpool("plan", str(EXAMPLE), "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert set(plan) == {"customJobSpec", "reductionServer", "cost", "warnings", "customJob"}
    assert plan["reductionServer"]["replicaCount"] == 16
    assert [p["replicaCount"] for p in plan["customJobSpec"]["workerPoolSpecs"]] == [1, 4, 16]


def test_plan_table_and_bad_input(tmp_path: Path) -> None:
    done = trainpool("plan", str(EXAMPLE))
    assert done.returncode == 0
    assert "| 2 | Reduction Server | 16 | n1-highcpu-16 |" in done.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("primary: {machine_type: n1-standard-4, replica_count: 2}\n")
    done = trainpool("plan", str(bad), "--json")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "primary.replica_count: 2 is not accepted; accepted: 1 (the primary is one replica; put "
        "more replicas in workers)\n"
    )


def test_catalog_filters() -> None:
    done = trainpool("catalog", "--kind", "machines", "--gpu", "--name", "a3-", "--json")
    assert done.returncode == 0, done.stderr
    names = [row["machine_type"] for row in json.loads(done.stdout)["machines"]]
    assert names == [
        "a3-highgpu-1g",
        "a3-highgpu-2g",
        "a3-highgpu-4g",
        "a3-highgpu-8g",
        "a3-megagpu-8g",
        "a3-ultragpu-8g",
    ]
    done = trainpool("catalog", "--kind", "gpus")
    assert done.returncode == 2
    assert (
        done.stderr
        == "--kind: 'gpus' is not accepted; accepted: all, machines, tpus, accelerators\n"
    )


def test_catalog_answers_where_to_get_8_h100() -> None:
    done = trainpool(
        "catalog", "--accelerator", "NVIDIA_H100_80GB", "--count", "8", "--location", "europe-west2"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("NVIDIA_H100_80GB by machine type and region (")
    assert lines[1].split() == [
        "machine_type",
        "accelerators",
        "region",
        "usd_per_hour",
        "spot_usd_per_hour",
    ]
    regions = [line.split()[4] for line in lines[2:]]
    assert regions[0].startswith("europe-") and "us-central1" in regions
    assert "a3-highgpu-8g  8 x NVIDIA_H100_80GB  us-central1" in done.stdout
    bad = trainpool("catalog", "--accelerator", "NVIDIA_H100")
    assert bad.returncode == 2
    assert bad.stderr.startswith("--accelerator: 'NVIDIA_H100' is not a known accelerator type;")


def test_plan_escape_hatch_flag(tmp_path: Path) -> None:
    request = tmp_path / "new.yaml"
    request.write_text("image_uri: img:1\nprimary: {machine_type: a5-futuregpu-8g}\n")
    refused = trainpool("plan", str(request), "--json")
    assert refused.returncode == 2
    assert "or set allow_unknown_machine_types" in refused.stderr
    done = trainpool("plan", str(request), "--json", "--allow-unknown-machine-types")
    assert done.returncode == 0, done.stderr
    warnings = json.loads(done.stdout)["warnings"]
    assert warnings[0].startswith("primary.machine_type: 'a5-futuregpu-8g' is not in the catalog;")
