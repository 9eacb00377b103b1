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
    assert done.stderr == "--kind: 'gpus' is not accepted; accepted: all, machines, accelerators\n"
