"""A local run on a disk that fills: it ends FAILED, saying what the disk refused, never
SUCCEEDED with its output cut and never with a traceback of ``trainpool run`` itself.

Before, a task that printed 30 MB on a 20 MB store crashed the run with ``OSError: [Errno 28]
No space left on device`` from the transcript's writer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.disks import tmpfs
from fixtures.pipelines import compile_fixture

from trainpool.emulated.pipeline_run import run_local

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def twenty_mb(tmp_path: Path) -> Iterator[Path]:
    yield from tmpfs(tmp_path / "disk", "20M")


def test_a_task_whose_output_the_disk_cannot_hold_fails_the_run_saying_what_was_kept(
    twenty_mb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VERTEX_AI_EMULATOR_HOST", raising=False)
    root = twenty_mb / "root"
    result = run_local(compile_fixture("speaks", tmp_path), {"megabytes": 30}, root)
    assert result.state == "FAILED"
    assert "Inner task failed: 'speak'" in result.error
    found = re.search(
        r"No space left on device writing the run's transcript (\S+): "
        r"it holds its first (\d+) bytes",
        result.error,
    )
    assert found is not None, result.error
    assert Path(found[1]) == result.transcript and result.transcript.parent.parent == root
    assert result.transcript.stat().st_size >= int(found[2])
    # room again: the next run on the same store succeeds
    for path in (root / "local-runs").rglob("*.log"):
        path.unlink()
    again = run_local(compile_fixture("speaks", tmp_path), {"megabytes": 1}, root)
    assert again.state == "SUCCEEDED", again.error
    assert again.outputs["Output"] == "spoke"
